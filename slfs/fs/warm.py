"""The warm-open bitmap: which read-only opens need nothing but an answer (a warm `grep -r`).

One byte per inode (they are dense): 1 where a read-only open needed nothing else, as of the
handlers' shown epoch it was set at. 20,000 items take 20 KB, which stays in the CPU's cache
between requests where a dict or the nodes themselves would not.
"""

from __future__ import annotations

from ..world.tree import Item, Node

LIMIT = 1 << 24  # inodes a byte is kept for (16 MB at most)


class WarmOpens:
    __slots__ = ("epoch", "marked", "marks")

    def __init__(self) -> None:
        self.marks = bytearray()
        self.marked: list[int] = []  # the inodes whose byte is set
        self.epoch = -1

    def known(self, inode: int, epoch: int) -> bool:
        """Whether the last read-only open of `inode` was warm and nothing changed since `epoch`'s
        start. A moved epoch forgets every mark."""
        if self.epoch != epoch:
            self._forget(epoch)
            return False
        marks = self.marks
        return inode < len(marks) and bool(marks[inode])

    def mark(self, inode: int) -> None:
        if inode < LIMIT:
            marks = self.marks
            if inode >= len(marks):
                marks.extend(bytes(max(inode + 1, 2 * len(marks)) - len(marks)))
            marks[inode] = 1
            self.marked.append(inode)

    def _forget(self, epoch: int) -> None:
        """Something changed: no open is known warm any more. Only the bytes set are cleared (a cold
        grep changes the epoch with every open's fetch)."""
        marks = self.marks
        for inode in self.marked:
            marks[inode] = 0
        self.marked.clear()
        self.epoch = epoch

    @staticmethod
    def is_warm(node: Node | None) -> bool:
        """A read-only open of `node` needs no handle, no fetch and no check beyond this."""
        return (type(node) is Item and node.edit.buffer is None and node.cache.content_valid
                and node.cache.content is not None
                and node.readable)

    @classmethod
    def check(cls, inode: int, node: Node | None) -> None:
        """The test suite's check (Debug.check_listings): a remembered warm open is still one."""
        if not cls.is_warm(node):
            raise AssertionError(f"inode {inode}: a warm open was answered after a change the model did not report")
