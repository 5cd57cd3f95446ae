"""What a template is: named slots with their samplers, and a render function from filled slots to text.

A render function returns every English phrasing of one meaning and its one German translation, so the
generator can pick a phrasing while tests check the German for hand-chosen slot fillings. Render
functions are plain module-level functions (the decorator returns them unchanged) so a test can call
`travel.train_departs(Slots(city=..., time=...))` directly.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Realisation = tuple[list[str], str]  # (English phrasings, German)
Sampler = Sequence[Any] | Callable[[random.Random], Any]


class Slots(dict):
    """Filled slots, read as attributes: `s.city.de`."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True)
class Template:
    name: str  # "<topic>.<function name>"
    topic: str
    slots: tuple[tuple[str, Sampler], ...]
    render: Callable[[Slots], Realisation]

    def sample(self, rng: random.Random) -> Slots:
        """Fill every slot in declaration order (so a seed always gives the same sentences)."""
        return Slots((name, draw(sampler, rng)) for name, sampler in self.slots)

    def generate(self, rng: random.Random) -> tuple[str, str]:
        """One (English, German) pair: random slot fillings and a random English phrasing."""
        english, german = self.render(self.sample(rng))
        return finish(rng.choice(english)), finish(german)


def draw(sampler: Sampler, rng: random.Random) -> Any:
    return sampler(rng) if callable(sampler) else rng.choice(sampler)


def finish(sentence: str) -> str:
    """Capitalise the first letter and collapse spaces; templates write sentence-initial words lower case
    when a slot (a noun phrase, a time) may open the sentence."""
    sentence = " ".join(sentence.split())
    return sentence[:1].upper() + sentence[1:]


class Topic:
    """A topic's templates, registered with `@TOPIC.template(slot=sampler, ...)`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.templates: list[Template] = []

    def template(self, **slots: Sampler) -> Callable[[Callable[[Slots], Realisation]],
                                                     Callable[[Slots], Realisation]]:
        def register(render: Callable[[Slots], Realisation]) -> Callable[[Slots], Realisation]:
            self.templates.append(Template(f"{self.name}.{render.__name__}", self.name, tuple(slots.items()),
                                           render))
            return render
        return register

