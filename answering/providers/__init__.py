"""The language models that may write, rewrite and judge: the interface, its clients and the configured one."""
