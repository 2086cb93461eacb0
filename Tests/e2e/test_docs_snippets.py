"""scripts/docs_snippets.py, which hands every swift block of the README and the DocC catalog to
scripts/docs.sh to compile: an example against the module, a package manifest against the
toolchain's PackageDescription, and a block that is neither refused (it could not be checked)."""

import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "docs_snippets.py")


def run(tmp_path, text):
    page = tmp_path / "page.md"
    page.write_text(text)
    return subprocess.run([sys.executable, SCRIPT, str(tmp_path / "out"), str(page)], capture_output=True, text=True, timeout=60)


def test_every_block_is_written_with_its_kind(tmp_path):
    done = run(tmp_path, "# A\n\n```swift\nimport Sluice\n\nlet client = try S3Client()\n```\n\ntext\n\n"
                         "```swift\n// swift-tools-version:6.0\nimport PackageDescription\n\nlet package = Package(name: \"A\")\n```\n")
    assert done.returncode == 0, done.stderr
    lines = [line.split("\t") for line in done.stdout.splitlines()]
    assert [(os.path.basename(path), kind) for path, kind, _ in lines] == [("main.swift", "sluice"), ("Package.swift", "manifest")]
    assert [origin.rsplit(":", 1)[1] for _, _, origin in lines] == ["4", "12"]
    assert open(lines[0][0]).read() == "import Sluice\n\nlet client = try S3Client()\n"


def test_a_fragment_is_refused_naming_where_it_is(tmp_path):
    done = run(tmp_path, "```swift\nimport Sluice\n```\n\n```swift\nlet result = try await client.upload(file: path, to: url)\n```\n")
    assert done.returncode == 1
    assert "page.md:6 imports neither Sluice nor PackageDescription" in done.stderr
