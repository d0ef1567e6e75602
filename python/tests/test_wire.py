"""The Python client's modules, generated from proto/ at build time
(build/python), against a real shefl-coordinator on 127.0.0.1 under mutual
TLS and per-daemon tokens: a registration with its own certificate and
token gets a session, clients and the run's config; a wrong token and a
missing client certificate are refused as the C++ daemon's would be."""
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

import grpc
import yaml

import shefl_pb2
import shefl_pb2_grpc
from support import BIN, free_port, synthetic_config


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Wire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shefl-py-wire-")
        cls.pki = os.path.join(cls.tmp, "pki")
        subprocess.run([os.path.join(BIN, "shefl"), "certs", "--out", cls.pki, "--hosts",
                        "localhost", "--clients", "2"], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(cls.tmp, "c.yaml"), "w") as f:
            f.write(synthetic_config("python-wire", 1))
        cls.port = free_port()
        cls.log = open(os.path.join(cls.tmp, "coordinator.log"), "w")
        cls.coordinator = subprocess.Popen(
            [os.path.join(BIN, "shefl-coordinator"), "--config", os.path.join(cls.tmp, "c.yaml"),
             "--out", os.path.join(cls.tmp, "run"), "--listen", "127.0.0.1:%d" % cls.port,
             "--tls-cert", os.path.join(cls.pki, "server.pem"),
             "--tls-key", os.path.join(cls.pki, "server.key"),
             "--tls-client-ca", os.path.join(cls.pki, "ca.pem"),
             "--token-file", os.path.join(cls.pki, "tokens")],
            stdout=cls.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", cls.port)) == 0:
                    return
            if cls.coordinator.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("coordinator did not listen:\n" + read(cls.log.name).decode())

    @classmethod
    def tearDownClass(cls):
        cls.coordinator.kill()
        cls.coordinator.wait()
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def stub(self, client_cert=True):
        creds = grpc.ssl_channel_credentials(
            root_certificates=read(os.path.join(self.pki, "ca.pem")),
            private_key=read(os.path.join(self.pki, "client-0.key")) if client_cert else None,
            certificate_chain=read(os.path.join(self.pki, "client-0.pem")) if client_cert else None)
        channel = grpc.secure_channel("localhost:%d" % self.port, creds)
        self.addCleanup(channel.close)
        return shefl_pb2_grpc.CoordinatorStub(channel)

    def token(self):
        return read(os.path.join(self.pki, "client-0.token")).decode().strip()

    def test_a_registration_gets_a_session_clients_and_the_config(self):
        reply = self.stub().Register(shefl_pb2.RegisterRequest(
            daemon_name="python-0", token=self.token(), device="cpu", auto_clients=2), timeout=30)
        self.assertTrue(reply.session_id)
        self.assertEqual(reply.run_name, "python-wire")
        self.assertEqual(len(reply.clients), 2)
        config = yaml.safe_load(reply.config_yaml)
        self.assertEqual(config["model"]["name"], "mlp")
        self.assertEqual(config["model"]["num_models"], 3)

    def test_a_wrong_token_is_refused(self):
        with self.assertRaises(grpc.RpcError) as cm:
            self.stub().Register(shefl_pb2.RegisterRequest(
                daemon_name="python-1", token="0" * 64, device="cpu", auto_clients=2), timeout=30)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED)

    def test_no_client_certificate_no_connection(self):
        with self.assertRaises(grpc.RpcError) as cm:
            self.stub(client_cert=False).Register(shefl_pb2.RegisterRequest(
                daemon_name="python-2", token=self.token(), device="cpu", auto_clients=2),
                timeout=10)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)


if __name__ == "__main__":
    unittest.main()
