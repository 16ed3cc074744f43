"""minikafka.controller: what a Kafka controller decides, and the metadata log it decides into."""

__all__: list[str] = []
