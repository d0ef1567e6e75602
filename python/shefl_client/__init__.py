"""shefl's Python client: the wire codec today (shefl_client.codec); the
daemon protocol is to follow."""
