"""minikafka.net: the broker's network layer (seed 000 "网络层", seed 003).

Framing (the 4-byte size prefix and sticky packets), request and response headers,
the trio Reactor (Acceptor, Processors, RequestChannel, handler pool) with Kafka's
per-connection ordering, zero-copy file regions, and the client-side NetworkClient.
"""

import minikafka.common  # noqa: F401  (first, before kio: a program leaves out hypothesis)

from ._api_keys import ApiKey as ApiKey
from ._api_spec import ApiSpec as ApiSpec
from ._api_spec import ApiTable as ApiTable
from ._api_versions import NO_FEATURES as NO_FEATURES
from ._api_versions import Features as Features
from ._api_versions import api_versions_response as api_versions_response
from ._api_versions import handle_api_versions as handle_api_versions
from ._body_classes import body_classes as body_classes
from ._body_classes import is_body as is_body
from ._body_classes import load_body_classes as load_body_classes
from ._channel import RequestChannel as RequestChannel
from ._client import NetworkClient as NetworkClient
from ._client import Node as Node
from ._client import PendingRequest as PendingRequest
from ._client_errors import AuthenticationFailed as AuthenticationFailed
from ._client_errors import ClientError as ClientError
from ._client_errors import DisconnectedError as DisconnectedError
from ._client_errors import RequestTimedOut as RequestTimedOut
from ._client_errors import SaslAuthenticationFailed as SaslAuthenticationFailed
from ._client_errors import SslAuthenticationFailed as SslAuthenticationFailed
from ._client_errors import UnsupportedVersionError as UnsupportedVersionError
from ._client_security import CLIENT_SECURITY_KEYS as CLIENT_SECURITY_KEYS
from ._client_security import ClientSecurity as ClientSecurity
from ._codec import api_name as api_name
from ._codec import build as build
from ._codec import decode_request_body as decode_request_body
from ._codec import decode_response_body as decode_response_body
from ._codec import encode_entity as encode_entity
from ._codec import has_field as has_field
from ._codec import nested as nested
from ._codec import request_schema as request_schema
from ._codec import response_schema as response_schema
from ._config import CONTROLLER_MECHANISM as CONTROLLER_MECHANISM
from ._config import DEFAULT_SECURITY_PROTOCOL_MAP as DEFAULT_SECURITY_PROTOCOL_MAP
from ._config import INTER_BROKER_MECHANISM as INTER_BROKER_MECHANISM
from ._config import NET_CONFIG as NET_CONFIG
from ._config import SECURITY_PROTOCOLS as SECURITY_PROTOCOLS
from ._config import Listener as Listener
from ._config import NetConfig as NetConfig
from ._config import is_listener_key as is_listener_key
from ._config import listener_endpoints as listener_endpoints
from ._config import parse_listeners as parse_listeners
from ._config import parse_security_protocol_map as parse_security_protocol_map
from ._config import security_protocol_map as security_protocol_map
from ._connection import KafkaChannel as KafkaChannel
from ._demo import DemoApis as DemoApis
from ._describe_transactions_v0 import (
    DescribeTransactionsResponse as DescribeTransactionsResponse,
)
from ._events import ConnectionAccepted as ConnectionAccepted
from ._events import ConnectionClosed as ConnectionClosed
from ._events import RequestCompleted as RequestCompleted
from ._framing import ForeignProtocol as ForeignProtocol
from ._framing import FrameDecoder as FrameDecoder
from ._framing import FrameError as FrameError
from ._framing import FrameTooLarge as FrameTooLarge
from ._framing import InvalidFrameSize as InvalidFrameSize
from ._framing import encode_frame as encode_frame
from ._headers import InvalidRequest as InvalidRequest
from ._headers import RequestHeader as RequestHeader
from ._headers import encode_request_header as encode_request_header
from ._headers import parse_request_header as parse_request_header
from ._headers import parse_response_header as parse_response_header
from ._headers import request_header_version as request_header_version
from ._headers import response_header_version as response_header_version
from ._memory_pool import MemoryPool as MemoryPool
from ._processor import Processor as Processor
from ._quotas import ConnectionQuotas as ConnectionQuotas
from ._request import REQUEST_TIME_COMPONENTS as REQUEST_TIME_COMPONENTS
from ._request import Request as Request
from ._request import RequestMetrics as RequestMetrics
from ._request import Response as Response
from ._request import ResponseAction as ResponseAction
from ._sasl_channel import answer_without_sasl as answer_without_sasl
from ._server import Acceptor as Acceptor
from ._server import RequestHandler as RequestHandler
from ._server import SocketServer as SocketServer

__all__ = [
    "CLIENT_SECURITY_KEYS",
    "CONTROLLER_MECHANISM",
    "DEFAULT_SECURITY_PROTOCOL_MAP",
    "INTER_BROKER_MECHANISM",
    "NET_CONFIG",
    "NO_FEATURES",
    "REQUEST_TIME_COMPONENTS",
    "SECURITY_PROTOCOLS",
    "Acceptor",
    "ApiKey",
    "ApiSpec",
    "ApiTable",
    "AuthenticationFailed",
    "ClientError",
    "ClientSecurity",
    "ConnectionAccepted",
    "ConnectionClosed",
    "ConnectionQuotas",
    "DemoApis",
    "DescribeTransactionsResponse",
    "DisconnectedError",
    "Features",
    "ForeignProtocol",
    "FrameDecoder",
    "FrameError",
    "FrameTooLarge",
    "InvalidFrameSize",
    "InvalidRequest",
    "KafkaChannel",
    "Listener",
    "MemoryPool",
    "NetConfig",
    "NetworkClient",
    "Node",
    "PendingRequest",
    "Processor",
    "Request",
    "RequestChannel",
    "RequestCompleted",
    "RequestHandler",
    "RequestHeader",
    "RequestMetrics",
    "RequestTimedOut",
    "Response",
    "ResponseAction",
    "SaslAuthenticationFailed",
    "SocketServer",
    "SslAuthenticationFailed",
    "UnsupportedVersionError",
    "answer_without_sasl",
    "api_name",
    "api_versions_response",
    "body_classes",
    "build",
    "controlled_shutdown_v3",
    "decode_request_body",
    "decode_response_body",
    "encode_entity",
    "encode_frame",
    "encode_request_header",
    "handle_api_versions",
    "has_field",
    "is_body",
    "is_listener_key",
    "leader_and_isr_v5",
    "listener_endpoints",
    "load_body_classes",
    "nested",
    "parse_listeners",
    "parse_request_header",
    "parse_response_header",
    "parse_security_protocol_map",
    "request_header_version",
    "request_schema",
    "response_header_version",
    "response_schema",
    "security_protocol_map",
    "stop_replica_v3",
    "update_metadata_v7",
]
from ._zk_schemas import controlled_shutdown_v3 as controlled_shutdown_v3
from ._zk_schemas import leader_and_isr_v5 as leader_and_isr_v5
from ._zk_schemas import stop_replica_v3 as stop_replica_v3
from ._zk_schemas import update_metadata_v7 as update_metadata_v7
