"""What the tests share: harnesses (mount, inproc), worlds, the fake viewer, the raw sim client,
the session recorder, the foreign listener and the viewer selection. No tests here."""
