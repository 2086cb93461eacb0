#!/usr/bin/env python3
"""botocore as an independent peer for Sluice's S3 configuration and XML parsing.

Reads one JSON request on stdin and writes one JSON answer on stdout:

  {"ini": [PATH, ...]}
      botocore.configloader.raw_config_parse of each file:
      [{"ok": true, "sections": {...}} | {"ok": false, "error": "..."}]
  {"resolve": [{"env": {...}, "profile": NAME|null}, ...]}
      what botocore resolves for an s3 client with exactly that environment:
      [{"ok": true, "access_key": ..., "secret_key": ..., "token": ..., "region": ...,
        "endpoint_url": ..., "addressing_style": ..., "profile": ...} | {"ok": false, "error": "..."}]
  {"xml": [{"operation": NAME, "status": N, "body": TEXT}, ...]}
      botocore's rest-xml parser on each S3 answer: the parsed dict (JSON-safe) or its error.
"""
import json
import os
import sys

import botocore.configloader
import botocore.exceptions
import botocore.session


def ini(paths):
    out = []
    for path in paths:
        try:
            out.append({"ok": True, "sections": botocore.configloader.raw_config_parse(path)})
        except Exception as error:  # noqa: BLE001 - any failure is the answer
            out.append({"ok": False, "error": f"{type(error).__name__}: {error}"})
    return out


def resolve(cases):
    out = []
    saved = dict(os.environ)
    for case in cases:
        os.environ.clear()
        os.environ.update(case["env"])
        os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
        try:
            session = botocore.session.Session(profile=case.get("profile"))
            credentials = session.get_credentials()
            region = session.get_config_variable("region")
            client = session.create_client("s3", region_name=region or "us-east-1")
            endpoint = client.meta.endpoint_url
            configured = "amazonaws.com" not in endpoint
            style = (session.get_scoped_config().get("s3") or {})
            style = style.get("addressing_style") if isinstance(style, dict) else None
            out.append({
                "ok": True,
                "access_key": credentials.access_key if credentials else None,
                "secret_key": credentials.secret_key if credentials else None,
                "token": credentials.token if credentials else None,
                "region": region,
                "endpoint_url": endpoint if configured else None,
                "addressing_style": style,
                "profile": session.profile or "default",
            })
        except Exception as error:  # noqa: BLE001
            out.append({"ok": False, "error": f"{type(error).__name__}: {error}"})
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return out


def xml(documents):
    from botocore.parsers import create_parser
    session = botocore.session.get_session()
    model = session.get_service_model("s3")
    parser = create_parser("rest-xml")
    out = []
    for document in documents:
        operation = model.operation_model(document["operation"])
        response = {"status_code": document["status"], "headers": {}, "body": document["body"].encode()}
        try:
            parsed = parser.parse(response, operation.output_shape)
            parsed.pop("ResponseMetadata", None)
            out.append({"ok": True, "parsed": json.loads(json.dumps(parsed, default=str))})
        except Exception as error:  # noqa: BLE001
            out.append({"ok": False, "error": f"{type(error).__name__}: {error}"})
    return out


def main():
    request = json.load(sys.stdin)
    if "ini" in request:
        answer = ini(request["ini"])
    elif "resolve" in request:
        answer = resolve(request["resolve"])
    else:
        answer = xml(request["xml"])
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
