"""What a server keeps of an object, read back with boto3, for Sluice's object-option tests.

    python3 s3_readback.py INPUT.json  ->  {"status": 200, "head": {...}, "tags": {...}, "attributes": {...}}

INPUT: {"endpoint", "region", "access_key", "secret_key", "bucket", "key", "sse_c_key": base64 or
absent}. "head" is HeadObject with checksum mode on (ContentType, CacheControl, Metadata,
ChecksumCRC64NVME, ChecksumType, ServerSideEncryption, ...; dates as strings); "tags" is
GetObjectTagging as a dict; a refused HeadObject gives {"status": N, "code": ...}.
"""
import base64
import json
import sys

from botocore.exceptions import ClientError

from s3_object import client


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    s3 = client(spec)
    where = {"Bucket": spec["bucket"], "Key": spec["key"]}
    sse = {}
    if spec.get("sse_c_key"):
        sse = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": base64.b64decode(spec["sse_c_key"])}
    try:
        head = s3.head_object(ChecksumMode="ENABLED", **where, **sse)
    except ClientError as error:
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        json.dump({"status": status, "code": error.response.get("Error", {}).get("Code")}, sys.stdout)
        return
    head.pop("ResponseMetadata", None)
    try:
        tags = {t["Key"]: t["Value"] for t in s3.get_object_tagging(**where)["TagSet"]}
    except ClientError as error:
        tags = {"error": error.response.get("Error", {}).get("Code")}
    json.dump({"status": 200, "head": head, "tags": tags}, sys.stdout, default=str)


if __name__ == "__main__":
    main()
