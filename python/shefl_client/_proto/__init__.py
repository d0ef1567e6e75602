"""The gRPC modules generated from proto/ (shefl_pb2, shefl_pb2_grpc,
health_pb2, health_pb2_grpc) by python/build_proto.py: at `pip install`,
or by the CMake build into this folder of a checkout. Never committed."""
