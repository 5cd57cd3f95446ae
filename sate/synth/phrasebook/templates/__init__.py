"""Every phrasebook template, by topic. A topic is one module; its templates register on its `TOPIC`."""

from __future__ import annotations

from sate.synth.phrasebook.templates import (
    appointments,
    directions,
    health,
    hotel,
    restaurant,
    shopping,
    smalltalk,
    travel,
    weather,
)
from sate.synth.phrasebook.templates.base import Slots, Template

TOPICS = {module.TOPIC.name: module.TOPIC for module in (
    travel, weather, shopping, directions, appointments, restaurant, hotel, health, smalltalk)}
TEMPLATES: tuple[Template, ...] = tuple(t for topic in TOPICS.values() for t in topic.templates)

__all__ = ["TEMPLATES", "TOPICS", "Slots", "Template"]
