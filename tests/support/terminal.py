"""Running a program with its output on a pseudo-terminal, as on a user's terminal (colour, the
`isatty` branches), and reading back what it printed there."""

from __future__ import annotations

import os
import pty
import subprocess


def on_a_terminal(argv: list[str], env: dict[str, str], *, stderr: int = subprocess.STDOUT) -> tuple[int, str]:
    """Run argv with its stdout on a pseudo-terminal (stdin not one; stderr there too unless
    `stderr` says otherwise); -> (status, what it printed there)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=stderr, env=env)
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the slave side closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        rc = proc.wait(timeout=60)
    finally:
        os.close(master)
    return rc, b"".join(chunks).decode().replace("\r\n", "\n")
