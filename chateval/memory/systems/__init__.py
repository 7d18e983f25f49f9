"""Built-in memory systems; importing this package registers them."""
from . import full_context  # noqa: F401
