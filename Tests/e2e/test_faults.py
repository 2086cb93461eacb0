"""Every row of DESIGN.md's fault table, against the fault-injecting loopback server, with the
default (curl) transport. The same rows with URLSession: scripts/fault_matrix.py."""

import pytest

from faults import ROWS


@pytest.mark.parametrize("name, row", ROWS, ids=[name for name, _ in ROWS])
def test_fault_row_with_curl(fault_url, tmp_path, name, row):
    ok, detail = row(fault_url, "curl", str(tmp_path))
    assert ok, "%s: %s" % (name, detail)
