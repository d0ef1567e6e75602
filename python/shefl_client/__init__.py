"""shefl's Python client. So far: the wire codec (shefl_client.codec, byte
for byte the C++ one) and the results API (shefl_client.results, a run
folder as Python objects). The daemon protocol is to follow."""
