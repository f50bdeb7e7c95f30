"""What the mount is made of, as pure rules with no I/O: names and the naming rules, the errors a
request can end in (an errno and the reason), the echo of our own writes, the viewer generations
and the open_cmd template. The model, the file system layer and the client all read them here."""
