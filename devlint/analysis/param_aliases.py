"""Parameters that may hold the same object, as the file's own calls show (devlint.analysis.listed_files).

    def get_data(args): zip_ref.extractall(args.dataset)
    def index_kg(args): torch.save(triples, args.dataset + "/{m}--triples.pt".format(m=m))
    def make_dataset(args):
        get_data(args); index_kg(args)
        found = glob.glob(os.path.join(args.dataset, "*--triples.pt"))

`roots(ctx, param)` is the set of bindings a parameter's value may come from: the parameter itself and,
for each direct call of its function in the file (devlint.analysis.direct_calls.references: none for a
method, a test, a name bound twice) that passes a plain name there, that name's binding, and its roots in
turn. Two parameters whose roots meet may hold one object: `args.dataset` of `get_data`, `index_kg` and
`make_dataset` above is one folder, so a listing of it in one function sees what the others write there.
A value that comes by a callback, `*args` or a call in another file adds no root: as far as the file
shows it is another object (the "one binding of a parameter" convention of devlint.analysis.origins'
`path_key`), so this only ever joins folders, never tells them apart.
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.direct_calls import references
from devlint.facts import FileFacts


def same_member(ctx: FileFacts, a, b) -> bool:
    """Are two hashed path components `("member", ("binding", ("node", id)), X)` one attribute of objects
    that may be the same (their roots meet)?"""
    if not (a[0] == b[0] == "member" and a[2] == b[2]):
        return False
    left, right = _param_of(ctx, a[1]), _param_of(ctx, b[1])
    return left is not None and right is not None and bool(roots(ctx, left) & roots(ctx, right))


def roots(ctx: FileFacts, param: cst.Param) -> frozenset:
    memo = ctx.__dict__.setdefault("_devlint_param_roots", {})
    if param not in memo:
        memo[param] = frozenset({id(param)})  # (while it is computed: a recursion adds nothing more)
        memo[param] = _roots(ctx, param)
    return memo[param]


def _roots(ctx: FileFacts, param: cst.Param) -> frozenset:
    from devlint.analysis.origins import path_key

    found = {id(param)}
    function = ctx.enclosing(param, (cst.FunctionDef,))
    names = references(ctx, function) if function is not None else None
    for name in names or ():
        call = ctx.parent(name)
        if not isinstance(call, cst.Call) or call.func is not name:
            continue
        value = _argument(function, param, call)
        key = path_key(ctx, value) if isinstance(value, cst.Name) else None
        if key is None or key[0] != "binding":
            continue
        found.add(id(key[1]))
        if isinstance(key[1], cst.Param):
            found |= roots(ctx, key[1])
    return frozenset(found)


def _argument(function: cst.FunctionDef, param: cst.Param, call: cst.Call) -> cst.CSTNode | None:
    if any(a.star for a in call.args):
        return None
    positional = list(function.params.posonly_params) + list(function.params.params)
    index = next((i for i, p in enumerate(positional) if p is param), None)
    given = [a for a in call.args if a.keyword is None]
    if index is not None and index < len(given):
        return given[index].value
    by_name = [a for a in call.args if a.keyword is not None and a.keyword.value == param.name.value]
    return by_name[0].value if len(by_name) == 1 else None


def _param_of(ctx: FileFacts, root) -> cst.Param | None:
    if not (isinstance(root, tuple) and len(root) == 2 and root[0] == "binding"):
        return None
    params = ctx.memoised("_devlint_params_by_id", lambda c: {("node", id(p)): p for p in c.nodes(cst.Param)})
    return params.get(root[1])
