"""A reference memory agent for chateval's HTTP protocol v1, standard library only.

It keeps every turn of every case in memory and answers with the stored user turns that share
the most words with the question (a word-overlap memory: a baseline, not a good agent). Copy it
and put your own memory and model behind the three endpoints.

    python examples/http_agent.py --port 8080
    chateval bench longmemeval --systems http --set http.url=http://127.0.0.1:8080 --data FILE --out runs/http

Protocol v1 (JSON over HTTP POST, UTF-8):
    POST /reset   {"case_id"}                                       -> {}
    POST /ingest  {"case_id", "session_id", "date", "turns": [{"turn_id", "role", "content"}]} -> {}
    POST /ingest_batch {"case_id", "sessions": [{"session_id", "date", "turns"}, ...]}  -> {}
                  (optional: many sessions in one request, in date order; without it, 404)
    POST /respond {"case_id", "question", "date", "dialogue": [turn, ...] | null}
                  -> {"answer", "context", "retrieved": [{"session_id", "turn_id", "score"}], "usage"}
"""

from __future__ import annotations

import argparse
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOP_K = 3
cases: dict[str, list[dict]] = {}  # case_id -> stored turns, each with its session_id
lock = threading.Lock()


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) > 2}


def ingest(case_id: str, session: dict) -> None:
    with lock:
        cases.setdefault(case_id, []).extend(
            dict(t, session_id=session["session_id"], date=session["date"]) for t in session["turns"])


def respond(body: dict) -> dict:
    with lock:
        turns = list(cases.get(body["case_id"], []))
    question = words(body["question"])
    scored = sorted(((len(question & words(t["content"])), i, t) for i, t in enumerate(turns) if t["role"] == "user"),
                    key=lambda x: (-x[0], x[1]))
    best = [(score, t) for score, _, t in scored[:TOP_K] if score > 0]
    context = "\n".join(f"[{t['date']}] {t['content']}" for _, t in best)
    answer = best[0][1]["content"] if best else "I don't know."
    return {"answer": answer, "context": context,
            "retrieved": [{"session_id": t["session_id"], "turn_id": t["turn_id"], "score": s} for s, t in best],
            "usage": None}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client sends its next request on the same connection

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode("utf-8"))
            if self.path == "/reset":
                with lock:
                    cases[body["case_id"]] = []
                reply: dict = {}
            elif self.path == "/ingest":
                ingest(body["case_id"], body)
                reply = {}
            elif self.path == "/ingest_batch":
                for session in body["sessions"]:
                    ingest(body["case_id"], session)
                reply = {}
            elif self.path == "/respond":
                reply = respond(body)
            else:
                return self._send(404, {"error": f"no endpoint {self.path}"})
        except (KeyError, ValueError) as e:
            return self._send(400, {"error": f"bad request: {e}"})
        self._send(200, reply)

    def _send(self, status: int, data: dict) -> None:
        blob = json.dumps(data).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(blob)))
        self.end_headers()
        self.wfile.write(blob)

    def log_message(self, *args: object) -> None:  # quiet: one line per request is noise here
        pass


def serve(host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A started server (in a daemon thread); ``server.server_address`` has the bound port."""
    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="reference chateval memory agent (protocol v1)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080, help="0 picks a free port (printed)")
    a = p.parse_args()
    srv = ThreadingHTTPServer((a.host, a.port), Handler)
    print(f"listening on http://{srv.server_address[0]}:{srv.server_address[1]}", flush=True)
    srv.serve_forever()
