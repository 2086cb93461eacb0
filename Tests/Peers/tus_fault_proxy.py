"""A TCP proxy for Sluice's tus tests that breaks the first PATCH mid-body.

    python3 tus_fault_proxy.py --target 127.0.0.1:PORT --reset-after BYTES

Listens on 127.0.0.1 (an ephemeral port, printed as "PORT <n>" on stdout once listening),
forwards every connection to the target, and after BYTES bytes of the body of the first
PATCH request it sees, resets both connections (RST, SO_LINGER 0). Everything after that
is forwarded untouched. Prints "RESET <bytes>" when it resets.
"""

import argparse
import selectors
import socket
import struct
import sys
import threading

state = {"done": False}
state_lock = threading.Lock()


def reset(sock: socket.socket) -> None:
    """Close with RST: SO_LINGER 0, and no other thread blocked on the socket."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def relay(client: socket.socket, server: socket.socket, reset_after: int) -> None:
    """Forwards both ways on one thread, watching client -> server for the first PATCH."""
    watching = None  # bytes of the PATCH body forwarded so far, or None
    pending = b""
    selector = selectors.DefaultSelector()
    selector.register(client, selectors.EVENT_READ, server)
    selector.register(server, selectors.EVENT_READ, client)
    try:
        while True:
            for key, _ in selector.select():
                source, target = key.fileobj, key.data
                data = source.recv(65536)
                if not data:
                    return
                if source is client:
                    if watching is None:
                        with state_lock:
                            if not state["done"]:
                                pending = (pending + data)[-65536:]
                                start = pending.find(b"PATCH /")
                                end = pending.find(b"\r\n\r\n", start) if start >= 0 else -1
                                if end >= 0:
                                    watching = len(pending) - (end + 4) - len(data)
                                    state["done"] = True
                    if watching is not None:
                        watching += len(data)
                        if watching >= reset_after:
                            keep = len(data) - (watching - reset_after)
                            if keep > 0:
                                target.sendall(data[:keep])
                            print(f"RESET {reset_after}", flush=True)
                            return
                target.sendall(data)
    except OSError:
        return
    finally:
        selector.close()
        reset(client)
        reset(server)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--reset-after", type=int, required=True)
    args = parser.parse_args()
    host, port = args.target.rsplit(":", 1)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    while True:
        client, _ = listener.accept()
        try:
            server = socket.create_connection((host, int(port)))
        except OSError:
            reset(client)
            continue
        threading.Thread(target=relay, args=(client, server, args.reset_after), daemon=True).start()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
