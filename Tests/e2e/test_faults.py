"""Every row of DESIGN.md's fault table, against the fault-injecting loopback server, with
both transports: a failing row fails the run (scripts/test.sh). scripts/fault_matrix.py prints
the same rows as a table."""

import pytest

from faults import ROWS

TRANSPORTS = ["curl", "urlsession"]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name, row", ROWS, ids=[name for name, _ in ROWS])
def test_fault_row(fault_url, tmp_path, name, row, transport):
    ok, detail = row(fault_url, transport, str(tmp_path))
    assert ok, "%s / %s: %s" % (name, transport, detail)
