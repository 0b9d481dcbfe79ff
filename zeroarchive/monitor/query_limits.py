"""What a GraphQL query may ask, checked on its syntax tree before graphql-core validates
or runs it, in one pass that stays linear: nesting depth, aliases, fields (fragments
expanded, so a fragment spread a thousand times counts a thousand times), how often one
field is selected in one selection set (graphql-core's overlapping-fields rule compares
every pair of those: 4,000 copies of ``count`` took 20 s of CPU), and a cost: every field
counts once per object it is resolved on, and a list multiplies what is under it by its
size (``limit``, ``days``, or the estimate its schema gives)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    value_from_ast_untyped,
)

#: Arguments that say how many items a list field answers, in this order.
SIZE_ARGUMENTS = ("limit", "first", "days")
#: The size of a list field with no size argument and no estimate of its own.
LIST_ESTIMATE = 100
#: (parent type, field, its arguments, the parent field's arguments) -> list size or None.
ListSizes = Callable[[str, str, dict[str, Any], dict[str, Any]], int | None]


class QueryRefused(Exception):
    """A query over a limit; the message says which, for the client and the log."""


@dataclass(frozen=True)
class QueryLimits:
    """MONITOR_MAX_DEPTH, _ALIASES, _FIELDS, _REPEATS, _COST and _FRAGMENTS."""

    max_depth: int
    max_aliases: int
    max_fields: int
    max_repeats: int
    max_cost: int
    #: Fragment definitions: graphql-core compares every pair spread into one selection
    #: set (330 fragments took it 0.8 s).
    max_fragments: int


@dataclass
class _Walk:
    limits: QueryLimits
    fragments: dict[str, FragmentDefinitionNode]
    variables: dict[str, Any]
    sizes: ListSizes
    fields: int = 0
    aliases: int = 0
    cost: int = 0
    _stack: list[str] = field(default_factory=list)

    def collect(self, sets: list[SelectionSetNode], into: dict[str, list[FieldNode]]) -> None:
        for selection_set in sets:
            for selection in selection_set.selections:
                if isinstance(selection, FieldNode):
                    self.fields += 1
                    if self.fields > self.limits.max_fields:
                        raise QueryRefused(f"over {self.limits.max_fields} fields")
                    if selection.alias is not None:
                        self.aliases += 1
                        if self.aliases > self.limits.max_aliases:
                            raise QueryRefused(f"over {self.limits.max_aliases} aliases")
                    name = (selection.alias or selection.name).value
                    into.setdefault(name, []).append(selection)
                elif isinstance(selection, InlineFragmentNode):
                    self.collect([selection.selection_set], into)
                elif isinstance(selection, FragmentSpreadNode):
                    self._spread(selection.name.value, into)

    def _spread(self, name: str, into: dict[str, list[FieldNode]]) -> None:
        fragment = self.fragments.get(name)
        if fragment is None or name in self._stack:
            return  # unknown or cyclic: validation says so, without expanding it
        self.fields += 1  # a spread costs a step even when its fragment is empty
        if self.fields > self.limits.max_fields:
            raise QueryRefused(f"over {self.limits.max_fields} fields")
        self._stack.append(name)
        self.collect([fragment.selection_set], into)
        self._stack.pop()

    def arguments(self, node: FieldNode) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for argument in node.arguments:
            try:
                values[argument.name.value] = value_from_ast_untyped(argument.value, self.variables)
            except (TypeError, ValueError):
                values[argument.name.value] = None
        return values

    def size(
        self,
        parent: str,
        name: str,
        definition: GraphQLField | None,
        args: dict[str, Any],
        parent_args: dict[str, Any],
    ) -> int:
        estimate = self.sizes(parent, name, args, parent_args)
        if estimate is not None:
            return max(estimate, 1)
        for size_argument in SIZE_ARGUMENTS:
            value = args.get(size_argument)
            if value is None and definition is not None and size_argument in definition.args:
                value = definition.args[size_argument].default_value
            if isinstance(value, int) and not isinstance(value, bool):
                return max(value, 1)
        return LIST_ESTIMATE

    def walk(
        self,
        sets: list[SelectionSetNode],
        parent: Any,
        depth: int,
        multiplier: int,
        parent_args: dict[str, Any],
    ) -> None:
        if depth > self.limits.max_depth:
            raise QueryRefused(f"nested deeper than {self.limits.max_depth}")
        merged: dict[str, list[FieldNode]] = {}
        self.collect(sets, merged)
        for response_name, nodes in merged.items():
            if len(nodes) > self.limits.max_repeats:
                raise QueryRefused(
                    f"{response_name[:40]!r} selected {len(nodes)} times in one selection set "
                    f"(at most {self.limits.max_repeats})"
                )
            self.cost += multiplier
            if self.cost > self.limits.max_cost:
                raise QueryRefused(f"costs over {self.limits.max_cost} (see the monitor's Limits)")
            children = [node.selection_set for node in nodes if node.selection_set]
            if not children:
                continue
            name = nodes[0].name.value
            fields = parent.fields if isinstance(parent, GraphQLObjectType) else {}
            definition = fields.get(name)
            args = self.arguments(nodes[0])
            child_multiplier = multiplier
            child_type = None
            if definition is not None:
                of_type = definition.type
                if isinstance(of_type, GraphQLNonNull):
                    of_type = of_type.of_type
                if isinstance(of_type, GraphQLList):
                    child_multiplier *= self.size(parent.name, name, definition, args, parent_args)
                child_type = get_named_type(definition.type)
            self.walk(children, child_type, depth + 1, child_multiplier, args)


def _no_sizes(_parent: str, _field: str, _args: dict[str, Any], _up: dict[str, Any]) -> None:
    return None


def check_query(
    document: DocumentNode,
    schema: GraphQLSchema,
    variables: dict[str, Any] | None,
    limits: QueryLimits,
    sizes: ListSizes = _no_sizes,
) -> int:
    """The query's cost; QueryRefused when it is over any limit. Work is bounded by
    ``max_fields`` whatever the query (fragment bombs included)."""
    fragments = {
        definition.name.value: definition
        for definition in document.definitions
        if isinstance(definition, FragmentDefinitionNode)
    }
    if len(fragments) > limits.max_fragments:
        raise QueryRefused(f"over {limits.max_fragments} fragments")
    walk = _Walk(limits, fragments, variables or {}, sizes)
    roots = {
        "query": schema.query_type,
        "mutation": schema.mutation_type,
        "subscription": schema.subscription_type,
    }
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            root = roots.get(definition.operation.value)
            walk.walk([definition.selection_set], root, 1, 1, {})
    # Validation reads every fragment, spread or not: each is held to the same limits on
    # its own (an unused fragment of 2,700 copies of one field took 28 s to validate).
    for name, fragment in fragments.items():
        alone = _Walk(limits, fragments, variables or {}, sizes, _stack=[name])
        alone.walk(
            [fragment.selection_set], schema.get_type(fragment.type_condition.name.value), 1, 1, {}
        )
    return walk.cost
