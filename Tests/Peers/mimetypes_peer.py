"""Python's answers for MediaTypeTableTests: `mimetypes.guess_type(name)[0]` with the tables
Python reads on this machine, the AWS CLI's own guess (`guess_content_type` of the absolute
path), and `guess_type` with Python's defaults plus the given mime.types files only.

Input (JSON file, first argument): {"names": [...], "files": [...]}; output (stdout): JSON
{"guess": [...], "awscli": [...], "custom": [...]}, each a type or null per name."""

import json
import mimetypes
import os
import sys

from awscli.customizations.s3.utils import guess_content_type

with open(sys.argv[1], encoding="utf-8") as f:
    request = json.load(f)
names = request["names"]
custom = mimetypes.MimeTypes()
for path in request.get("files", []):
    custom.read(path)
json.dump({
    "guess": [mimetypes.guess_type(name)[0] for name in names],
    "awscli": [guess_content_type(os.path.abspath(name)) for name in names],
    "custom": [custom.guess_type(name)[0] for name in names],
}, sys.stdout)
