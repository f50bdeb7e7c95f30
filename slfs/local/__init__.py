"""The disk adapters: the history store (SQLite), the recovery and trash copies, the event log
file, the viewer's live-sync temp files and the times kept per item. None of them imports the
model; the model passes them what they need."""
