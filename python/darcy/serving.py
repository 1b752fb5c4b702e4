"""darcy.serving: a small client of `darcy serve`'s HTTP API (top-k, predictions, model
status, loads), with bearer tokens, and LocalServer, a `darcy serve` process of this machine's.
Errors come back as darcy exceptions named after the answer's status."""

import json
import os
import re
import subprocess
import urllib.error
import urllib.request

from darcy import _darcy

# HTTP status of `darcy serve` -> the exception it raises here.
_STATUS_ERRORS = {
    400: _darcy.InvalidArgument,
    401: _darcy.Unauthenticated,
    403: _darcy.AccessDenied,
    404: _darcy.NotFound,
    413: _darcy.BatchTooLarge,
    429: _darcy.QuotaExceeded,
    503: _darcy.Unavailable,
    504: _darcy.DeadlineExceeded,
}


def _error_of(status, body):
    """The exception of an error answer: the class of its darcy code when it names one
    ({"error": {"code", "message"}}), else the class of its HTTP status."""
    code, message = None, body
    try:
        error = json.loads(body)["error"]
        code, message = error.get("code"), error.get("message", body)
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    by_code = {getattr(c, "code", None): c for c in vars(_darcy).values()
               if isinstance(c, type) and issubclass(c, _darcy.Error)}
    cls = by_code.get(code) or _STATUS_ERRORS.get(status, _darcy.Error)
    return cls(f"HTTP {status}: {message}")


class Client:
    """`url` is the server's base (http://127.0.0.1:8080); `token` its bearer token, if the
    server has tokens configured."""

    def __init__(self, url, token=None, timeout=10.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def topk(self, model, user=None, items=None, values=None, vector=None, k=10,
             deadline_ms=None, allow_partial=None):
        """The k best items of `model` for a known `user`, for a new user's `items` (with
        optional `values`), or for a `vector`. Returns the server's answer: items (id, name,
        score), version, partial, trace_id."""
        body = {"k": k}
        for name, value in (("user", user), ("items", items), ("values", values),
                            ("deadline_ms", deadline_ms), ("allow_partial", allow_partial)):
            if value is not None:
                body[name] = value
        if vector is not None:
            body["vector"] = [float(x) for x in vector]
        return self._call("POST", f"/v1/models/{model}:topk", body)

    def predict(self, model, instances, deadline_ms=None, allow_partial=None):
        """The predictions of an Estimator or PyTorch export for `instances` (a list of dicts
        of its inputs). Returns the server's answer: predictions, version, and more by kind."""
        body = {"instances": instances}
        for name, value in (("deadline_ms", deadline_ms), ("allow_partial", allow_partial)):
            if value is not None:
                body[name] = value
        return self._call("POST", f"/v1/models/{model}:predict", body)

    def sync(self, model, sync_dir):
        """Brings `model` to the newest sync under `sync_dir` (a folder the server reads):
        an Estimator's stream syncs, or darcy.torch.write_sync's. Returns the server's
        answer: the sync it holds now ("checkpoint", "step", "dense_step", ...)."""
        return self._call("POST", f"/v1/models/{model}:sync", {"dir": str(sync_dir)})

    def push_sync(self, model, sync_dir):
        """Sends `model` what it lacks of the newest sync under `sync_dir` (a folder of this
        host: darcy.torch.write_sync's, or an Estimator's stream syncs) as one sync message,
        so that the server needs no access to the folder: the deltas after the checkpoint it
        holds, or the whole chain when it asks for it, and the newer dense sync. Returns the
        server's answer, or, when it holds that sync already, its description's "sync"."""
        held = self.model(model).get("sync", {})
        body = _darcy._sync_message(os.fspath(sync_dir), held.get("checkpoint", ""),
                                    held.get("dense_checkpoint", ""))
        if body is None:
            return {"model": model, "sync": held}
        path = f"/v1/models/{model}:sync"
        try:
            return self._call("POST", path, raw=body)
        except _darcy.OutOfOrder:  # its mirror does not hold our base: the whole chain
            whole = _darcy._sync_message(os.fspath(sync_dir), "",
                                         held.get("dense_checkpoint", ""))
            return self._call("POST", path, raw=whole)

    def model(self, model):
        """The model's status: version, shards' health, load history."""
        return self._call("GET", f"/v1/models/{model}")

    def load(self, model, version):
        """Loads `version` of `model` beside the one serving, then switches to it."""
        return self._call("POST", f"/v1/models/{model}:load", {"version": str(version)})

    def _call(self, method, path, body=None, raw=None):
        data = raw if raw is not None else json.dumps(body).encode() if body is not None \
            else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/octet-stream" if raw is not None
                           else "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as e:
            raise _error_of(e.code, e.read().decode(errors="replace")) from None
        except (urllib.error.URLError, OSError) as e:
            raise _darcy.Unavailable(f"not available: {self.url}: {e}") from None


class LocalServer:
    """`darcy serve --exports EXPORTS` in a process of its own on a free loopback port, with
    `args` added (["--embedding-shards", "2", "--cluster", seed], say); `client` talks to it.
    Use as a context manager, or call close(), which kills it. `binary` as LocalCluster's.
    Raises darcy.Unavailable, with the server's output, when it does not start."""

    def __init__(self, exports, args=(), binary=None, token=None):
        from darcy.cluster import _binary
        self._process = subprocess.Popen(
            [_binary(binary), "serve", "--listen", "127.0.0.1:0", "--exports", str(exports),
             *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        said = []
        for line in self._process.stdout:
            said.append(line)
            found = re.search(r"darcy serve listening on (http://[0-9.]+:[0-9]+)", line)
            if found:
                self.url = found.group(1)
                self.client = Client(self.url, token)
                return
        self._process.wait()
        raise _darcy.Unavailable("not available: darcy serve did not start: " + "".join(said))

    def close(self):
        self._process.kill()
        self._process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
