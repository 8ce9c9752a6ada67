"""Compile-time validation: every mistake is a DefinitionError naming the culprit and fix."""

from __future__ import annotations

from typing import Any

import pytest

from agentnb import END, START, DefinitionError, StateGraph


def noop(state: dict[str, Any]) -> None:
    return None


def graph(*names: str) -> StateGraph:
    g = StateGraph("t")
    for name in names:
        g.add_node(name, noop)
    return g


def test_a_valid_graph_compiles_with_start_and_end_pseudo_nodes() -> None:
    g = graph("a", "b")
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    wf = g.compile()
    assert wf.entry == "a"
    assert wf.successors("a") == ["b"]
    assert wf.successors("b") == [END]


@pytest.mark.parametrize(
    ("build", "culprit", "message"),
    [
        (lambda g: g.add_edge("a", "ghost"), "ghost", "not a node"),
        (lambda g: g.add_edge("ghost", "a"), "ghost", "not a node"),
        (
            lambda g: g.add_conditional_edge("a", lambda s: "x", ["ghost"]),
            "ghost",
            "not a node",
        ),
        (lambda g: g.add_interrupt_before("ghost"), "ghost", "does not exist"),
        (lambda g: g.add_interrupt_after("ghost"), "ghost", "does not exist"),
        (lambda g: g.add_node("b", noop), "b", "cannot be reached"),
    ],
)
def test_structural_mistakes_are_reported_at_compile_time(
    build: Any, culprit: str, message: str
) -> None:
    g = graph("a").set_entry_point("a")
    build(g)
    with pytest.raises(DefinitionError, match=message) as err:
        g.compile()
    assert err.value.culprit == culprit
    assert err.value.fix


def test_missing_entry_point_says_how_to_set_one() -> None:
    with pytest.raises(DefinitionError, match=r"no entry point.*set_entry_point\('a'\)"):
        graph("a").compile()


def test_unknown_entry_point_is_refused() -> None:
    with pytest.raises(DefinitionError, match="entry point 'x' is not a node"):
        graph("a").set_entry_point("x").compile()


def test_empty_graph_is_refused() -> None:
    with pytest.raises(DefinitionError, match="no nodes"):
        StateGraph("t").compile()


@pytest.mark.parametrize("name", ["END", "START", "__end__", "", "  ", 3, None])
def test_reserved_and_blank_node_names_are_refused_at_once(name: Any) -> None:
    with pytest.raises(DefinitionError):
        StateGraph("t").add_node(name, noop)


def test_duplicate_nodes_are_refused_at_once() -> None:
    g = graph("a", "b", "c")
    with pytest.raises(DefinitionError, match="already defined"):
        g.add_node("a", noop)


def test_second_plain_edges_fan_out_and_a_repeated_edge_is_kept_once() -> None:
    g = graph("a", "b", "c").set_entry_point("a")
    g.add_edge("a", "b").add_edge("a", "c").add_edge("a", "b")
    assert g.edges["a"] == ["b", "c"]
    assert g.compile().successors("a") == ["b", "c"]


def test_an_edge_from_a_list_of_nodes_is_a_join() -> None:
    g = graph("a", "b", "c", "d").set_entry_point("a")
    g.add_edge("a", "b").add_edge("a", "c").add_edge(["b", "c"], "d")
    wf = g.compile()
    assert [(j.sources, j.target) for j in wf.joins] == [(("b", "c"), "d")]
    assert wf.successors("b") == ["d"]
    with pytest.raises(DefinitionError, match="a list of them"):
        g.add_edge([], "d")
    with pytest.raises(DefinitionError, match="names 'x', which is not a node"):
        graph("a", "b").set_entry_point("a").add_edge(["a", "x"], "b").compile()


@pytest.mark.parametrize(
    "fn",
    [
        "not callable",
        lambda: None,
        lambda state, ctx, extra: None,
    ],
)
def test_node_functions_must_take_state_or_state_and_ctx(fn: Any) -> None:
    with pytest.raises(DefinitionError, match="node 'a'"):
        StateGraph("t").add_node("a", fn)


@pytest.mark.parametrize("targets", ["a", [], {}, 42])
def test_conditional_edges_declare_a_list_or_mapping_of_targets(targets: Any) -> None:
    with pytest.raises(DefinitionError, match="conditional edge from 'a'"):
        graph("a").add_conditional_edge("a", lambda s: "x", targets)


def test_a_second_conditional_edge_from_one_node_is_refused() -> None:
    g = graph("a", "b").add_conditional_edge("a", lambda s: "b", ["b"])
    with pytest.raises(DefinitionError, match="already has a conditional edge"):
        g.add_conditional_edge("a", lambda s: "b", ["b"])


@pytest.mark.parametrize("max_steps", [0, -1, 2.5, True])
def test_max_steps_must_be_a_positive_int(max_steps: Any) -> None:
    with pytest.raises(DefinitionError, match="max_steps"):
        graph("a").set_entry_point("a").compile(max_steps=max_steps)


def test_routing_is_a_pure_function_of_node_and_state() -> None:
    g = graph("a", "big", "small").set_entry_point("a")
    g.add_conditional_edge(
        "a", lambda s: "hi" if s["n"] > 5 else "lo", {"hi": "big", "lo": "small"}
    )
    wf = g.compile()
    assert wf.route("a", {"n": 9}) == "big"
    assert wf.route("a", {"n": 1}) == "small"
    assert wf.route("big", {}) == END
    assert wf.successors("a") == ["big", "small"]


def test_shape_digest_changes_with_structure_not_with_functions() -> None:
    def build(fn: Any, interrupt: bool) -> str:
        g = StateGraph("t").add_node("a", fn).add_node("b", noop).set_entry_point("a")
        g.add_edge("a", "b")
        if interrupt:
            g.add_interrupt_before("b")
        return g.compile().shape

    assert build(noop, False) == build(lambda s: {"x": 1}, False)
    assert build(noop, False) != build(noop, True)


def test_ctx_is_passed_only_to_nodes_that_ask_for_it() -> None:
    def with_ctx(state: Any, ctx: Any) -> None: ...
    def named(state: Any, ctx: Any = None) -> None: ...
    def star(*args: Any) -> None: ...

    g = StateGraph("t")
    g.add_node("plain", noop).add_node("with_ctx", with_ctx).add_node("named", named)
    g.add_node("default", lambda state, i=3: None).add_node("star", star)
    takes = {name: spec.takes_ctx for name, spec in g.nodes.items()}
    assert takes == {
        "plain": False,
        "with_ctx": True,
        "named": True,
        "default": False,
        "star": True,
    }


@pytest.mark.parametrize(
    ("approvers", "separate_duties", "fact"),
    [
        ("ada", False, "neither a collection of names nor a callable"),
        (b"ada", False, "neither a collection of names nor a callable"),
        (42, False, "neither a collection of names nor a callable"),
        ([], False, "approvers is empty"),
        (set(), True, "approvers is empty"),
        (["ada", 7], False, "approver 7 is not a name"),
        (["  "], False, "is not a name"),
        (["group:"], False, "'group:' is not a name"),
        ({"ada"}, "yes", "separate_duties='yes' must be True or False"),
    ],
)
def test_a_bad_approver_policy_is_a_definition_error_with_the_fix(
    approvers: Any, separate_duties: Any, fact: str
) -> None:
    for declare in (graph("a").add_interrupt_before, graph("a").add_interrupt_after):
        with pytest.raises(DefinitionError, match=fact) as bad:
            declare("a", approvers=approvers, separate_duties=separate_duties)
        assert bad.value.culprit
        assert bad.value.fix


def test_an_interrupts_policy_is_declared_once() -> None:
    g = graph("a").set_entry_point("a").add_interrupt_before("a", approvers={"ada"})
    g.add_interrupt_before("a")  # no policy: the interrupt keeps its approvers
    with pytest.raises(DefinitionError, match="already has approvers"):
        g.add_interrupt_before("a", approvers={"bob"})
    assert g.compile().policies["before:a"].approvers == {"ada"}
    g.add_node("b", noop).add_edge("a", "b")
    with pytest.raises(DefinitionError, match="already has approvers"):
        g.add_interrupt_before("b", "a", approvers={"bob"})  # refused whole: b unchanged
    assert (g.interrupts_before, set(g.policies)) == ({"a"}, {"before:a"})


def test_the_compiled_workflow_keeps_stored_policies_and_callable_checks_apart() -> None:
    def policy(identity: Any, run: Any) -> bool:
        return True

    g = graph("a", "b").set_entry_point("a").add_edge("a", "b")
    g.add_interrupt_before("b", approvers=policy, separate_duties=True)
    g.add_interrupt_after("a", approvers=("ada", "group:finance"))
    wf = g.compile()
    assert wf.policies["before:b"].check == f"{__name__}.{policy.__qualname__}"
    assert wf.policies["before:b"].separate_duties
    assert wf.policies["after:a"].approvers == {"ada", "group:finance"}
    assert wf.policy_checks == {"before:b": policy}


@pytest.mark.parametrize("provider", ["ada", 3, object()])
def test_an_identity_provider_must_be_callable(provider: Any) -> None:
    from agentnb import Identity

    with pytest.raises(DefinitionError, match="is not an identity provider"):
        graph("a").set_entry_point("a").compile(identity=provider)
    with pytest.raises(DefinitionError, match="is not an identity provider"):
        graph("a").set_entry_point("a").compile(identity=Identity("ada"))  # type: ignore[arg-type]


def test_a_provider_that_returns_no_identity_is_refused_before_anything_is_stored() -> None:
    wf = graph("a").set_entry_point("a").compile(identity=lambda: "ada")  # type: ignore[arg-type, return-value]
    with pytest.raises(DefinitionError, match="returned 'ada', not an Identity"):
        wf.start({})
    assert wf.runs() == []


def test_an_async_approver_policy_is_refused_at_once() -> None:
    async def policy(identity: Any, run: Any) -> bool:
        return True

    with pytest.raises(DefinitionError, match="is async"):
        graph("a").add_interrupt_before("a", approvers=policy)


def test_a_plain_and_a_conditional_edge_from_one_node_both_apply_as_in_langgraph() -> None:
    g = graph("a", "b", "c", "d").set_entry_point("a")
    g.add_edge("a", "b").add_conditional_edge("a", lambda s: "c", ["c", "d"])
    run = g.compile().invoke({})
    assert run.status == "completed"
    started = [e.node for e in run.events if e.type == "node_start"]
    assert started == ["a", "b", "c"]
