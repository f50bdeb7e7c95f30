"""The daemon's control socket (newline-delimited JSON) and the client the CLI uses."""
