"""ConfigDef: the one way every package declares its keys, and what the broker builds on.

Checked here on a toy declaration: types and validators refuse with the key's name,
synonyms lose to the key's own name but are checked all the same, units scale (not -1),
and the names a ConfigDef lists are what ``KafkaConfig`` accepts. Then the packages'
real declarations: no key is declared by two packages.
"""

from __future__ import annotations

import attrs
import pytest

from minikafka.common import (
    ApiError,
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigType,
    ErrorCode,
    Synonym,
    at_least,
    between,
    one_of,
)


@attrs.frozen
class Toy:
    retention_ms: int = 1000
    ratio: float = 0.5
    policy: str = "delete"
    enabled: bool = False


HOURS = 3_600_000
TOY = ConfigDef(
    (
        ConfigKey(
            "retention.ms",
            ConfigType.LONG,
            "retention_ms",
            at_least(-1),
            synonyms=(
                Synonym("log.retention.ms"),
                Synonym("log.retention.hours", HOURS, ConfigType.INT),
            ),
        ),
        ConfigKey("ratio", ConfigType.DOUBLE, "ratio", between(0.0, 1.0)),
        ConfigKey("policy", ConfigType.STRING, "policy", one_of("delete", "compact")),
        ConfigKey("enabled", ConfigType.BOOLEAN, "enabled", synonyms=(Synonym(),)),
        ConfigKey("ignored.but.checked", ConfigType.INT, None, at_least(1)),
    )
)


def test_parse_sets_fields_and_leaves_other_keys_alone() -> None:
    toy = TOY.apply(Toy(), {"ratio": " 0.25 ", "enabled": "TRUE", "someone.elses": "x"})
    assert toy == Toy(ratio=0.25, enabled=True)


def test_the_key_itself_wins_over_its_synonyms_in_their_order() -> None:
    props = {"log.retention.hours": "2"}
    assert TOY.apply(Toy(), props).retention_ms == 2 * HOURS
    props["log.retention.ms"] = "5"
    assert TOY.apply(Toy(), props).retention_ms == 5
    props["retention.ms"] = "7"
    assert TOY.apply(Toy(), props).retention_ms == 7
    # not scaled
    assert TOY.apply(Toy(), {"log.retention.hours": "-1"}).retention_ms == -1


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"ratio": "1.5"}, "ratio"),
        ({"ratio": "half"}, "ratio"),
        ({"policy": "forever"}, "policy"),
        ({"enabled": "yes"}, "enabled"),
        ({"retention.ms": "-2"}, "retention.ms"),
        ({"log.retention.hours": str(2**31)}, "log.retention.hours"),  # an INT synonym
        (
            {"retention.ms": "1", "log.retention.hours": "x"},
            "log.retention.hours",
        ),  # checked
        ({"ignored.but.checked": "0"}, "ignored.but.checked"),
    ],
)
def test_a_bad_value_names_its_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        TOY.parse(props)
    assert caught.value.key == key
    assert str(caught.value).startswith(f"{key}: ")


def test_names_synonyms_and_lookup() -> None:
    assert TOY.names() == {
        "retention.ms",
        "ratio",
        "policy",
        "enabled",
        "ignored.but.checked",
    }
    assert TOY.synonym_names() == {"log.retention.ms", "log.retention.hours", "enabled"}
    assert "ratio" in TOY
    assert TOY["ratio"].field == "ratio"
    with pytest.raises(ValueError, match="declared twice"):
        _ = TOY + ConfigDef((ConfigKey("ratio", ConfigType.DOUBLE, "ratio"),))


def test_validate_checks_a_config_built_in_code() -> None:
    with pytest.raises(ConfigError) as caught:
        TOY.validate(Toy(ratio=2.0))
    assert caught.value.key == "ratio"


def test_api_error_carries_its_code() -> None:
    class Fixed(ApiError):
        error_code = ErrorCode.invalid_record

    class Carried(ApiError):
        def __init__(self, code: ErrorCode) -> None:
            super().__init__(code.name)
            self.error_code = code

    assert Fixed().error_code is ErrorCode.invalid_record
    assert Carried(ErrorCode.not_controller).error_code is ErrorCode.not_controller
    assert ApiError().error_code is ErrorCode.unknown_server_error
