"""Built-in memory systems; importing this package registers them."""
