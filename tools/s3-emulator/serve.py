"""moto's S3 emulator for the suite, with requests handled one at a time.

moto checks a conditional PUT's precondition (`If-None-Match: *`) and stores the object in two
separate steps, and its server handles requests on many threads: two concurrent PUTs of one
key could both succeed, which S3 itself never allows, and the commit contract tests exactly
that (eight committers racing for each version). A lock around the application makes each
request atomic, as S3's are; connections stay concurrent (keep-alive works).

Usage: serve.py HOST PORT
"""

import signal
import sys
import threading

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def one_at_a_time(environ, start_response):
        with lock:
            # The body is produced inside the lock too: moto builds responses eagerly.
            return list(app(environ, start_response))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run_simple(host, port, one_at_a_time, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
