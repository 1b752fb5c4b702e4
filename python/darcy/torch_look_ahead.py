"""The look-ahead of a training loop over tables on disk: a thread reads the next batches of
a loader (a torch DataLoader, any iterable) ahead of the loop and hands each batch's keys to
the tables as it reads it, so that their rows come from disk into memory while the batches
before it train.

    for batch in darcy.torch.look_ahead(loader, lambda b: bag.prefetch(b["ids"]), window=4):
        loss(model(batch)).backward()
"""

import queue
import threading

from darcy import _darcy

_END = object()


class _Failed:
    def __init__(self, error):
        self.error = error


def look_ahead(batches, prefetch, window=4):
    """An iterator over the batches of `batches` in their order, read up to `window` batches
    ahead by a thread of its own, which calls prefetch(batch) (a module's or table's prefetch
    of the batch's keys) for each batch once it is queued. A prefetch changes no row, so training
    learns what it would without it. An exception of the loader or of prefetch is raised
    where its batch would have come; the batches before it come first. Closing the iterator
    (leaving the loop) stops the thread. Raises darcy.InvalidArgument for a window below 1 or
    a prefetch that cannot be called."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise _darcy.InvalidArgument(f"invalid argument: a look-ahead window of {window!r}; "
                                     "at least 1 batch")
    if not callable(prefetch):
        raise _darcy.InvalidArgument("invalid argument: prefetch is called with each batch")
    return _read_ahead(batches, prefetch, window)


def _read_ahead(batches, prefetch, window):
    ready = queue.Queue(maxsize=window)
    stop = threading.Event()

    def put(item):
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read():
        try:
            for batch in batches:
                if not put(batch):
                    return
                prefetch(batch)
        except BaseException as e:  # noqa: B902 -- handed to the consumer
            put(_Failed(e))
            return
        put(_END)

    reader = threading.Thread(target=read, name="darcy-look-ahead", daemon=True)
    reader.start()
    try:
        while True:
            item = ready.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        reader.join()
