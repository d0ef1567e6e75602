"""The Python client's gRPC modules, generated from proto/ at build time
(shefl_client._proto), against a real shefl-coordinator on 127.0.0.1 under mutual
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
import torch.nn as nn
import yaml

from shefl_client import Client, ClientError, Options, sgd_train
from shefl_client._proto import shefl_pb2, shefl_pb2_grpc
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

    def test_the_layout_comes_when_asked_for(self):
        ask = lambda want: self.stub().Register(shefl_pb2.RegisterRequest(
            daemon_name="python-3", token=self.token(), device="cpu", auto_clients=1,
            want_model_layout=want), timeout=30)
        self.assertEqual(len(ask(False).model_layout), 0)
        layout = [(t.name, list(t.shape), t.buffer) for t in ask(True).model_layout]
        self.assertEqual(layout, [("fc1.weight", [200, 16], False), ("fc1.bias", [200], False),
                                  ("fc2.weight", [200, 200], False), ("fc2.bias", [200], False),
                                  ("fc3.weight", [4, 200], False), ("fc3.bias", [4], False)])

    def client(self, model, token_file=None, cert=True):
        o = Options("localhost:%d" % self.port, "auto:1", name="python-client",
                    out=os.path.join(self.tmp, "py"), tls_ca=os.path.join(self.pki, "ca.pem"),
                    tls_cert=os.path.join(self.pki, "client-1.pem") if cert else "",
                    tls_key=os.path.join(self.pki, "client-1.key") if cert else "",
                    token_file=token_file or os.path.join(self.pki, "client-1.token"),
                    max_backoff_s=0.5)
        return Client(o, model=lambda config: model, train=sgd_train)

    def test_a_module_of_another_layout_is_refused_naming_the_tensor(self):
        wrong = nn.Sequential(nn.Linear(16, 100), nn.ReLU(), nn.Linear(100, 4))
        with self.assertRaisesRegex(ClientError, r"does not match the coordinator's model "
                                    r"'mlp': tensor 0 is 0.weight \[100, 16\] here but "
                                    r"fc1.weight \[200, 16\] there"):
            self.client(wrong).run()

    def test_a_python_client_with_a_wrong_token_is_refused(self):
        bad = os.path.join(self.tmp, "bad.token")
        with open(bad, "w") as f:
            f.write("0" * 64 + "\n")
        with self.assertRaisesRegex(ClientError, "registration refused: UNAUTHENTICATED"):
            self.client(nn.Linear(1, 1), token_file=bad).run()


if __name__ == "__main__":
    unittest.main()


class ClientsFlag(unittest.TestCase):
    """--clients reads what `shefl run` writes, the step form included."""

    def test_clients_flag_reads_the_launchers_step_form(self):
        from shefl_client.options import parse_clients
        self.assertEqual(parse_clients("3-99993/10"), (list(range(3, 99994, 10)), 0))
        self.assertEqual(parse_clients("0-2,5-9/2,10"), ([0, 1, 2, 5, 7, 9, 10], 0))
        self.assertEqual(parse_clients("auto:4"), ([], 4))
        for bad in ("0-10/0", "5/2", "0-10/x", "10-0/2"):
            with self.assertRaisesRegex(ClientError, "0-90/10"):
                parse_clients(bad)
