"""Finishes a tus upload with the independent tuspy client, for Sluice's cross-check.

    python3 tus_finish.py UPLOAD_URL FILE

Asks the server for its offset (HEAD, via tuspy) and sends FILE from there to the end
with tuspy's Uploader. Prints "OFFSET <n>" (where tuspy started) and "DONE <n>".
"""

import sys

from tusclient import client as tus_client

url, path = sys.argv[1], sys.argv[2]
uploader = tus_client.TusClient(url.rsplit("/", 1)[0] + "/").uploader(file_path=path, url=url, chunk_size=4 << 20)
print(f"OFFSET {uploader.get_offset()}", flush=True)
uploader.upload()
print(f"DONE {uploader.offset}", flush=True)
