"""The suite: one folder per app and package, mirroring its modules, on real Postgres and the real models."""
