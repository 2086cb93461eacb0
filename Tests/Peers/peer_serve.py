"""The one way a peer script of this folder serves: it undoes a blocked or ignored SIGTERM
handed down by its parent (Foundation's Process spawns from a thread that blocks most signals,
and a peer must stop when it is ended by its PID), prints its port on the first line of stdout
for the test that started it, and serves until SIGINT or SIGTERM."""

import signal


def serve(server, announce="%d"):
    """Serves `server` (a socketserver.BaseServer bound to a free port) until it is stopped;
    `announce` formats the port line ("%d", or "PORT %d" for the tus peers)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals())
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print(announce % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
