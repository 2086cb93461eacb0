"""A tus 1.0 server for Sluice's tests: tuspyserver's router in a FastAPI app.

Run with uvicorn:  SLUICE_TUS_STORE=/tmp/x uvicorn --app-dir Tests/Peers tus_app:app --port 0
Uploads go to /files/; each stored file is $SLUICE_TUS_STORE/<id>, where <id> is the last
component of the Location the server answers a creation request with.
"""

import os

from fastapi import FastAPI
from tuspyserver import create_tus_router

STORE = os.environ.get("SLUICE_TUS_STORE", "/tmp/sluice-tus")
os.makedirs(STORE, exist_ok=True)

app = FastAPI()
app.include_router(
    create_tus_router(
        prefix="files",
        files_dir=STORE,
        max_size=1 << 44,
        days_to_keep=1,
    )
)


@app.get("/health")
def health() -> dict:
    return {"ok": True}
