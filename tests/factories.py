"""The base of the tests' model factories: ``SomeFactory(...)`` is typed as its model."""

from typing import TYPE_CHECKING, Any, TypeVar

import factory

ModelT = TypeVar("ModelT")


class ModelFactory(factory.django.DjangoModelFactory[ModelT]):
    """A ``DjangoModelFactory`` on ``ModelT``, e.g. ``class UserFactory(ModelFactory[User])``.

    Calling a factory builds through its metaclass's ``__call__`` (the create strategy, for
    Django's factories) and returns the model's instance; mypy does not read a metaclass's
    ``__call__``, so it is told here what the call returns. Runtime is unchanged.
    """

    class Meta:
        abstract = True

    if TYPE_CHECKING:

        def __new__(cls, *args: Any, **kwargs: Any) -> ModelT:  # type: ignore[misc]  # mypy reads __new__, not factory_boy's metaclass __call__, which returns the model
            ...
