"""minikafka.security: Kafka's security model as sans-IO cores.

Principals and ``ssl.principal.mapping.rules``; the SASL mechanisms PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512 and OAUTHBEARER (unsecured tokens), each with a server and a client side;
the SASL server authenticator (SaslHandshake, SaslAuthenticate, KIP-368's sessions) as a
state machine; and the StandardAuthorizer's decisions over ACLs. The network layer's
listeners run the principals and the SASL authenticator (``minikafka.net``'s ``_tls.py``
and ``_sasl_channel.py``); the broker asks the authorizer at its request points
(``minikafka.broker``'s ``_authorization.py``) when ``authorizer.class.name`` names it.
"""

from ._acl import ANY_FILTER as ANY_FILTER
from ._acl import CLUSTER_NAME as CLUSTER_NAME
from ._acl import WILDCARD_HOST as WILDCARD_HOST
from ._acl import WILDCARD_RESOURCE as WILDCARD_RESOURCE
from ._acl import AccessControlEntry as AccessControlEntry
from ._acl import AccessControlEntryFilter as AccessControlEntryFilter
from ._acl import AclBinding as AclBinding
from ._acl import AclBindingFilter as AclBindingFilter
from ._acl import AclOperation as AclOperation
from ._acl import AclPermissionType as AclPermissionType
from ._acl import InvalidAclError as InvalidAclError
from ._acl import PatternType as PatternType
from ._acl import ResourcePattern as ResourcePattern
from ._acl import ResourcePatternFilter as ResourcePatternFilter
from ._acl import ResourceType as ResourceType
from ._acl import validate_filter as validate_filter
from ._acl import validate_new_acl as validate_new_acl
from ._authenticator import TRANSITIONS as TRANSITIONS
from ._authenticator import Received as Received
from ._authenticator import SaslServerAuthenticator as SaslServerAuthenticator
from ._authenticator import SaslServerConfig as SaslServerConfig
from ._authenticator import SaslState as SaslState
from ._authenticator_io import AnswerApiVersions as AnswerApiVersions
from ._authenticator_io import AuthAction as AuthAction
from ._authenticator_io import Authenticated as Authenticated
from ._authenticator_io import AuthenticationFailed as AuthenticationFailed
from ._authenticator_io import Close as Close
from ._authenticator_io import Forward as Forward
from ._authenticator_io import Respond as Respond
from ._authenticator_io import RespondWithError as RespondWithError
from ._authenticator_io import SendToken as SendToken
from ._authenticator_io import authenticate_response as authenticate_response
from ._authenticator_io import handshake_response as handshake_response
from ._authorizer import Action as Action
from ._authorizer import AuthorizationResult as AuthorizationResult
from ._authorizer import Decision as Decision
from ._authorizer import StandardAuthorizer as StandardAuthorizer
from ._authorizer import parse_super_users as parse_super_users
from ._oauthbearer import OAUTHBEARER as OAUTHBEARER
from ._oauthbearer import OAuthBearerSaslServer as OAuthBearerSaslServer
from ._oauthbearer import TokenValidationError as TokenValidationError
from ._oauthbearer import UnsecuredToken as UnsecuredToken
from ._oauthbearer import UnsecuredValidatorOptions as UnsecuredValidatorOptions
from ._oauthbearer import client_initial_response as client_initial_response
from ._oauthbearer import unsecured_token as unsecured_token
from ._oauthbearer import validate_unsecured_token as validate_unsecured_token
from ._plain import PLAIN as PLAIN
from ._plain import PlainSaslServer as PlainSaslServer
from ._plain import plain_client_message as plain_client_message
from ._plain import plain_users as plain_users
from ._principal import ANONYMOUS as ANONYMOUS
from ._principal import WILDCARD_PRINCIPAL as WILDCARD_PRINCIPAL
from ._principal import KafkaPrincipal as KafkaPrincipal
from ._principal import NoMatchingRuleError as NoMatchingRuleError
from ._principal import SslPrincipalMapper as SslPrincipalMapper
from ._principal import distinguished_name as distinguished_name
from ._principal import parse_mapping_rules as parse_mapping_rules
from ._reauthentication import REAUTHENTICATION_WINDOW as REAUTHENTICATION_WINDOW
from ._reauthentication import ClientReauthentication as ClientReauthentication
from ._sasl import SaslAuthenticationError as SaslAuthenticationError
from ._sasl import SaslError as SaslError
from ._sasl import SaslServer as SaslServer
from ._sasl import parse_jaas_config as parse_jaas_config
from ._sasl_client import CLIENT_MECHANISMS as CLIENT_MECHANISMS
from ._sasl_client import SaslClient as SaslClient
from ._sasl_client import SaslClientSettings as SaslClientSettings
from ._scram import DelegationTokenCredential as DelegationTokenCredential
from ._scram import ScramSaslClient as ScramSaslClient
from ._scram import ScramSaslServer as ScramSaslServer
from ._scram_formatter import SCRAM_MECHANISMS as SCRAM_MECHANISMS
from ._scram_formatter import SCRAM_SHA_256 as SCRAM_SHA_256
from ._scram_formatter import SCRAM_SHA_512 as SCRAM_SHA_512
from ._scram_formatter import ScramCredential as ScramCredential
from ._scram_formatter import ScramMechanism as ScramMechanism
from ._scram_formatter import UnacceptableCredentialError as UnacceptableCredentialError
from ._scram_formatter import check_iterations as check_iterations
from ._scram_formatter import (
    credential_from_salted_password as credential_from_salted_password,
)
from ._scram_formatter import generate_credential as generate_credential
from ._scram_formatter import salted_password as salted_password

__all__ = [
    "ANONYMOUS",
    "ANY_FILTER",
    "CLIENT_MECHANISMS",
    "CLUSTER_NAME",
    "OAUTHBEARER",
    "PLAIN",
    "REAUTHENTICATION_WINDOW",
    "SCRAM_MECHANISMS",
    "SCRAM_SHA_256",
    "SCRAM_SHA_512",
    "TRANSITIONS",
    "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL",
    "WILDCARD_RESOURCE",
    "AccessControlEntry",
    "AccessControlEntryFilter",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "Action",
    "AnswerApiVersions",
    "AuthAction",
    "Authenticated",
    "AuthenticationFailed",
    "AuthorizationResult",
    "ClientReauthentication",
    "Close",
    "Decision",
    "DelegationTokenCredential",
    "Forward",
    "InvalidAclError",
    "KafkaPrincipal",
    "NoMatchingRuleError",
    "OAuthBearerSaslServer",
    "PatternType",
    "PlainSaslServer",
    "Received",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "Respond",
    "RespondWithError",
    "SaslAuthenticationError",
    "SaslClient",
    "SaslClientSettings",
    "SaslError",
    "SaslServer",
    "SaslServerAuthenticator",
    "SaslServerConfig",
    "SaslState",
    "ScramCredential",
    "ScramMechanism",
    "ScramSaslClient",
    "ScramSaslServer",
    "SendToken",
    "SslPrincipalMapper",
    "StandardAuthorizer",
    "TokenValidationError",
    "UnacceptableCredentialError",
    "UnsecuredToken",
    "UnsecuredValidatorOptions",
    "authenticate_response",
    "check_iterations",
    "client_initial_response",
    "credential_from_salted_password",
    "distinguished_name",
    "generate_credential",
    "handshake_response",
    "parse_jaas_config",
    "parse_mapping_rules",
    "parse_super_users",
    "plain_client_message",
    "plain_users",
    "salted_password",
    "unsecured_token",
    "validate_filter",
    "validate_new_acl",
    "validate_unsecured_token",
]
