// gRPC's and protobuf's headers and the generated protocol.
#include <google/protobuf/io/coded_stream.h>
#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "health.grpc.pb.h"
#include "shefl.grpc.pb.h"
#include "shefl.pb.h"
