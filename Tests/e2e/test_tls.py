"""https with a custom CA, verification failures, and HTTP/2 where offered, against an nginx
with TLS started here (self-signed CA made with the openssl CLI)."""

import os
import socket
import subprocess
import time

import pytest

from conftest import checksum, run, sha256_file, stop


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture(scope="module")
def tls_nginx(tmp_path_factory):
    if not os.path.exists("/usr/sbin/nginx") or not os.path.exists("/usr/bin/openssl"):
        pytest.skip("nginx or openssl missing: run through scripts/test.sh")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=Sluice Test CA", "-keyout", d / "ca.key", "-out", d / "ca.pem",
                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                    "-keyout", d / "server.key", "-out", d / "server.csr"], check=True, capture_output=True)
    (d / "ext").write_text("subjectAltName=IP:127.0.0.1\n")
    subprocess.run(["openssl", "x509", "-req", "-in", d / "server.csr", "-CA", d / "ca.pem", "-CAkey", d / "ca.key",
                    "-CAcreateserial", "-days", "2", "-extfile", d / "ext", "-out", d / "server.pem"],
                   check=True, capture_output=True)
    (d / "www" / "dav").mkdir(parents=True)
    (d / "logs").mkdir()
    (d / "body").mkdir()
    port = free_port()
    (d / "nginx.conf").write_text("""
daemon off; master_process off; worker_processes 1; pid %(d)s/nginx.pid;
error_log %(d)s/logs/error.log warn;
events { worker_connections 64; }
http {
    log_format proto '$request_uri $server_protocol $status';
    access_log %(d)s/logs/access.log proto;
    client_body_temp_path %(d)s/body; proxy_temp_path %(d)s/body; fastcgi_temp_path %(d)s/body;
    uwsgi_temp_path %(d)s/body; scgi_temp_path %(d)s/body;
    client_max_body_size 0;
    server {
        listen 127.0.0.1:%(port)d ssl http2;
        ssl_certificate %(d)s/server.pem; ssl_certificate_key %(d)s/server.key;
        location /dav/ { root %(d)s/www; dav_methods PUT; create_full_put_path on; }
    }
}
""" % {"d": d, "port": port})
    proc = subprocess.Popen(["/usr/sbin/nginx", "-c", str(d / "nginx.conf"), "-p", str(d)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120   # gate: nginx accepts a connection; the deadline is a hang guard
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, "nginx never listened on %d" % port
                time.sleep(0.05)
        yield "https://127.0.0.1:%d" % port, str(d)
    finally:
        stop(proc)


def test_custom_ca_uploads_over_http2_byte_exact(tls_nginx):
    url, d = tls_nginx
    spec = "synthetic:32MiB:12"
    status, _, err = run("upload", spec, url + "/dav/tls.bin", "-X", "PUT", "--cacert", d + "/ca.pem")
    assert status == 0, err
    assert sha256_file(d + "/www/dav/tls.bin") == checksum(spec)[0]
    log = open(d + "/logs/access.log").read()
    assert "/dav/tls.bin HTTP/2.0 201" in log or "/dav/tls.bin HTTP/2.0 204" in log, log


@pytest.mark.parametrize("transport", ["curl", "urlsession"])
def test_untrusted_certificate_is_one_clear_failure(tls_nginx, transport):
    url, _ = tls_nginx
    status, _, err = run("upload", "synthetic:1MiB", url + "/dav/untrusted.bin", "-X", "PUT", "--transport", transport, timeout=60)
    assert status == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "TLS" in lines[0], err


def test_insecure_skips_verification(tls_nginx):
    url, d = tls_nginx
    status, _, err = run("upload", "synthetic:1MiB", url + "/dav/insecure.bin", "-X", "PUT", "-k")
    assert status == 0, err
    assert os.path.getsize(d + "/www/dav/insecure.bin") == 1 << 20


def test_urlsession_refuses_tls_options_it_cannot_honour(tls_nginx):
    url, d = tls_nginx
    status, _, err = run("upload", "synthetic:1MiB", url + "/dav/x.bin", "--transport", "urlsession", "--cacert", d + "/ca.pem")
    assert status == 2 and "need the curl transport" in err, err
