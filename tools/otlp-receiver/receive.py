"""An OTLP receiver for the telemetry tests: takes traces and metrics over HTTP/protobuf
(POST /v1/traces, /v1/metrics) and gRPC (TraceService, MetricsService) on 127.0.0.1, decodes
them with the opentelemetry-proto package, and prints each span and metric data point as one
JSON line on stdout. The first line names the two ports: {"http": N, "grpc": M}."""

import json
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

lock = threading.Lock()


def emit(record):
    with lock:
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def spans(request, transport):
    for rs in request.resource_spans:
        service = attributes(rs.resource.attributes).get("service.name")
        for ss in rs.scope_spans:
            for s in ss.spans:
                emit({
                    "signal": "span", "transport": transport, "service": service, "name": s.name,
                    "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                    "parent_span_id": s.parent_span_id.hex(), "attributes": attributes(s.attributes),
                })


def metrics(request, transport):
    for rm in request.resource_metrics:
        service = attributes(rm.resource.attributes).get("service.name")
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                for p in getattr(m, kind).data_points if kind in ("sum", "gauge") else []:
                    emit({
                        "signal": "metric", "transport": transport, "service": service, "name": m.name,
                        "kind": kind, "value": p.as_double if p.HasField("as_double") else p.as_int,
                        "attributes": attributes(p.attributes),
                    })


class Http(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v1/traces":
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            spans(request, "http")
            answer = trace_service_pb2.ExportTraceServiceResponse()
        elif self.path == "/v1/metrics":
            request = metrics_service_pb2.ExportMetricsServiceRequest()
            request.ParseFromString(body)
            metrics(request, "http")
            answer = metrics_service_pb2.ExportMetricsServiceResponse()
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = answer.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def Export(self, request, context):
        spans(request, "grpc")
        return trace_service_pb2.ExportTraceServiceResponse()


class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def Export(self, request, context):
        metrics(request, "grpc")
        return metrics_service_pb2.ExportMetricsServiceResponse()


def main():
    http = ThreadingHTTPServer(("127.0.0.1", 0), Http)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    emit({"http": http.server_address[1], "grpc": grpc_port})
    http.serve_forever()


if __name__ == "__main__":
    main()
