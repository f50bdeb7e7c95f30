"""readdir's answers: a listing taken at opendir, replayed from an offset, with each entry's
attributes (readdirplus) and a kernel reference per entry answered.

Offsets are positions in the snapshot taken at opendir, so a listing stays consistent while
objects come and go; an entry gone or renamed since is skipped (its entry would bring the old name
back). A folder's own listing replays the attributes it last answered with while the shown epoch
has not moved (listings.py).
"""

from __future__ import annotations

import pyfuse3

from ..world.tree import ROOT_INODE, Folder, Item, Tree
from .attributes import Attributes
from .listings import Listing
from .lookups import Lookups
from .virtual import Virtual


class Replies:
    def __init__(self, tree: Tree, virtual: dict[int, Virtual], attributes: Attributes, lookups: Lookups, *,
                 check: bool) -> None:
        self.tree = tree
        self.virtual = virtual  # Control.nodes: the made-up nodes by inode
        self.attributes = attributes
        self.lookups = lookups
        self.check = check  # the test suite's check of replayed attributes (slfs/debug_hooks.py Debug)

    def answer(self, listing: Listing, start_id: int, token: pyfuse3.ReaddirToken, epoch: int) -> None:
        reply = pyfuse3.readdir_reply
        entry = self.attributes.entry
        names, encoded = listing.names, listing.encoded
        nodes = listing.nodes
        folder = listing.folder
        if nodes is not None and folder is not None and folder.entries is listing.source:
            # The folder's names are the listing's (its mapping is replaced on every change):
            # entries detached since are skipped; the attributes replay while nothing changed.
            replies = listing.replies_at(epoch, self.attributes.replayable)
            check = self.check
            for i in range(start_id, len(nodes)):
                node = nodes[i]
                if node.parent is not folder:
                    continue
                attr = replies[i]
                if attr is None:
                    attr = entry(node)
                elif check:
                    self.attributes.check_replay(node, attr)
                if not reply(token, encoded[i], attr, i + 1):
                    return
                self.lookups.add(node.inode)
            return
        if nodes is not None:  # a folder's entries (items and prims), the nodes themselves
            for i in range(start_id, len(nodes)):
                node = nodes[i]
                parent = node.parent
                if parent is None or parent.entries.get(names[i]) is not node:
                    continue  # gone or renamed since: its entry would bring the old name back
                if not reply(token, encoded[i], entry(node), i + 1):
                    return
                self.lookups.add(node.inode)
            return
        inodes = listing.inodes
        for i in range(start_id, len(inodes)):
            name, inode = names[i], inodes[i]
            found = self.tree.node(inode) or self.virtual.get(inode)
            if found is None:
                continue
            if isinstance(found, (Item, Folder)) and found.inode != ROOT_INODE and (
                    found.parent is None or found.parent.entries.get(name) is not found):
                continue  # gone or renamed since opendir: its entry would bring the old name back
            try:
                attr = entry(found)
            except OSError:
                continue  # an overlay file removed meanwhile
            if not reply(token, encoded[i], attr, i + 1):
                return
            self.lookups.add(found.inode)
