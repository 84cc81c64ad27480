//! Every error names the origin and the dotted field, and says what is wrong.

use crate::common::{big, small};
use numalab_workload::spec::{parse, resolve, WorkloadError};

const ORIGIN: &str = "t.toml";

/// A one-process spec with a region `buf` of 1 MiB and a thread group built
/// from `thread` (extra keys) and `phases`.
fn spec(thread: &str, phases: &str) -> String {
    format!(
        "[[process]]\nname = \"a\"\n[[process.region]]\nname = \"buf\"\nsize = \"1MiB\"\n\
         [[process.thread]]\nname = \"t\"\n{thread}\nphases = [{phases}]\n"
    )
}

/// Asserts that parsing `text` fails naming `field`, with `msg` in the message.
fn parse_err(text: &str, field: &str, msg: &str) {
    match parse(text, ORIGIN) {
        Err(e @ WorkloadError::Field { .. }) => check(&e, field, msg),
        Err(e) => panic!("expected a field error for `{field}`, got: {e}"),
        Ok(_) => panic!("expected an error for `{field}`, parsed fine:\n{text}"),
    }
}

/// Asserts that resolving `text` on the small machine fails naming `field`.
fn resolve_err(text: &str, field: &str, msg: &str) {
    let s = parse(text, ORIGIN).unwrap_or_else(|e| panic!("{e}"));
    match resolve(&s, &small(), 0, 1.0) {
        Err(e @ WorkloadError::Field { .. }) => check(&e, field, msg),
        Err(e) => panic!("expected a field error for `{field}`, got: {e}"),
        Ok(_) => panic!("expected an error for `{field}`, resolved fine:\n{text}"),
    }
}

fn check(e: &WorkloadError, field: &str, msg: &str) {
    let WorkloadError::Field {
        origin,
        field: f,
        message,
    } = e
    else {
        unreachable!()
    };
    assert_eq!(origin, ORIGIN);
    assert_eq!(f, field, "wrong field; message: {message}");
    assert!(
        message.contains(msg),
        "`{field}`: message {message:?} lacks {msg:?}"
    );
    let shown = e.to_string();
    assert!(shown.contains(ORIGIN) && shown.contains(field), "{shown}");
}

const P0: &str = "process[0].thread[0].phases[0]";

#[test]
fn toml_errors_name_the_origin_and_position() {
    for (text, what) in [
        ("name = ", "line 1"),
        ("[[process]]\nname = \"a\"\ncuont = 2\n", "cuont"),
        (
            "[[process]]\nname = \"a\"\ncount = 1.5\n",
            "integer or a string",
        ),
        (
            &spec("", "{ stream = \"buf\", pases = 2 }") as &str,
            "pases",
        ),
        (
            &spec("", "{ set_mempolicy = { mode = \"bind\", node = 1 } }") as &str,
            "node",
        ),
        (
            &spec(
                "",
                "{ random = \"buf\", accesses = 1, distribution = { zipf = 1, x = 2 } }",
            ) as &str,
            "x",
        ),
    ] {
        let e = parse(text, ORIGIN).unwrap_err();
        assert!(matches!(e, WorkloadError::Toml { .. }), "{e}");
        let s = e.to_string();
        assert!(s.contains(ORIGIN) && s.contains(what), "{s}");
    }
}

#[test]
fn top_level_and_cgroup_fields() {
    let ok_proc = "[[process]]\nname = \"a\"\n[[process.thread]]\nname = \"t\"\n";
    parse_err(
        &format!("score = \"fast\"\n{ok_proc}"),
        "score",
        "unknown score 'fast'",
    );
    parse_err(
        &format!("duration = \"10 +\"\n{ok_proc}"),
        "duration",
        "unexpected end",
    );
    parse_err(&format!("name = \" \"\n{ok_proc}"), "name", "empty");
    parse_err(
        &format!("[[cgroup]]\npath = \"x\"\n{ok_proc}"),
        "cgroup[0].path",
        "must start with '/'",
    );
    parse_err(
        &format!("[[cgroup]]\npath = \"/\"\n{ok_proc}"),
        "cgroup[0].path",
        "always exists",
    );
    parse_err(
        &format!("[[cgroup]]\npath = \"/a/../b\"\n{ok_proc}"),
        "cgroup[0].path",
        "'..'",
    );
    parse_err(
        &format!("[[cgroup]]\npath = \"/a\"\n[[cgroup]]\npath = \"/a\"\n{ok_proc}"),
        "cgroup[1].path",
        "declared twice",
    );
    parse_err(
        &format!("[[cgroup]]\npath = \"/a\"\ncpuset_cpus = \"0-x\"\n{ok_proc}"),
        "cgroup[0].cpuset_cpus",
        "not a CPU set item",
    );
    parse_err(
        &format!("[[cgroup]]\npath = \"/a\"\ncpuset_mems = \"1..\"\n{ok_proc}"),
        "cgroup[0].cpuset_mems",
        "empty expression",
    );
    resolve_err(
        &format!("duration = 0\n{ok_proc}"),
        "duration",
        "must be positive",
    );
    resolve_err(
        &format!("duration = \"1GiB\"\n{ok_proc}"),
        "duration",
        "size unit",
    );
    resolve_err(
        &format!("[[cgroup]]\npath = \"/a\"\ncpuset_cpus = \"cpu:ncpus\"\n{ok_proc}"),
        "cgroup[0].cpuset_cpus",
        "CPU 4 does not exist",
    );
    resolve_err(
        &format!("[[cgroup]]\npath = \"/a\"\ncpuset_mems = \"1..1\"\n{ok_proc}"),
        "cgroup[0].cpuset_mems",
        "empty node list",
    );
    resolve_err(
        &format!("[[cgroup]]\npath = \"/a\"\ncpuset_mems = \"2\"\n{ok_proc}"),
        "cgroup[0].cpuset_mems",
        "node 2 does not exist",
    );
}

#[test]
fn process_region_and_thread_fields() {
    parse_err(
        "[[process]]\nname = \"a b\"\n",
        "process[0].name",
        "not a name",
    );
    parse_err(
        "[[process]]\nname = \"a\"\n[[process]]\nname = \"a\"\n",
        "process[1].name",
        "used twice",
    );
    parse_err(
        "[[process]]\nname = \"a\"\ncount = \"2 *\"\n",
        "process[0].count",
        "unexpected end",
    );
    parse_err(
        "[[process]]\nname = \"a\"\ncgroup = \"/x\"\n",
        "process[0].cgroup",
        "no cgroup '/x'",
    );
    let r = |region: &str| {
        format!("[[process]]\nname = \"a\"\n[[process.region]]\nname = \"r\"\n{region}\n")
    };
    parse_err(
        &r("size = \"1 ** 2\""),
        "process[0].region[0].size",
        "unexpected '*'",
    );
    parse_err(
        &format!(
            "{}[[process.region]]\nname = \"r\"\nsize = 1\n",
            r("size = 1")
        ),
        "process[0].region[1].name",
        "used twice",
    );
    parse_err(
        &r("size = 1\npolicy = \"bind\""),
        "process[0].region[0].policy",
        "needs nodes",
    );
    parse_err(
        &r("size = 1\npolicy = \"fast\""),
        "process[0].region[0].policy",
        "unknown mode 'fast'",
    );
    parse_err(
        &r("size = 1\npolicy = { mode = \"weighted\", nodes = 0 }"),
        "process[0].region[0].policy.mode",
        "unknown mode",
    );
    parse_err(
        &r("size = 1\npolicy = { mode = \"local\", nodes = 0 }"),
        "process[0].region[0].policy.nodes",
        "takes no nodes",
    );
    parse_err(
        &spec("count = \"n\"\naffinity = \"node:\"", ""),
        "process[0].thread[0].affinity",
        "empty expression",
    );
    parse_err(
        &spec("start_after = \"t\"", ""),
        "process[0].thread[0].start_after",
        "no earlier thread group",
    );
    parse_err(
        &format!("{}[[process.thread]]\nname = \"t\"\n", spec("", "")),
        "process[0].thread[1].name",
        "used twice",
    );

    let t = "[[process.thread]]\nname = \"t\"\n";
    resolve_err(
        &format!("[[process]]\nname = \"a\"\ncount = -1\n{t}"),
        "process[0].count",
        "negative",
    );
    resolve_err(
        &format!("[[process]]\nname = \"a\"\ncount = \"1 / (nnodes - 2)\"\n{t}"),
        "process[0].count",
        "division by zero",
    );
    resolve_err(
        "[[process]]\nname = \"a\"\n[[process.thread]]\nname = \"t\"\ncount = 0\n",
        "process",
        "no threads",
    );
    resolve_err(
        "[[process]]\nname = \"a\"\ncount = 0\n[[process.thread]]\nname = \"t\"\n",
        "process",
        "no threads",
    );
    resolve_err(
        &format!("[[process]]\nname = \"a\"\ncount = 2\n{t}[[process]]\nname = \"a.1\"\n{t}"),
        "process[1].name",
        "two processes are named 'a.1'",
    );
    resolve_err(
        &format!("{}{t}", r("size = \"i * 4KiB\"")),
        "process[0].region[0].size",
        "unknown variable `i`",
    );
    resolve_err(
        &format!("{}{t}", r("size = 0")),
        "process[0].region[0].size",
        "must not be empty",
    );
    resolve_err(
        &format!("{}{t}", r("size = \"17GiB\"")),
        "process[0].region[0].size",
        "more than the machine's",
    );
    resolve_err(
        &format!("{}{t}", r("size = \"1s\"")),
        "process[0].region[0].size",
        "time unit",
    );
    resolve_err(
        &format!(
            "{}{t}",
            r("size = 1\npolicy = { mode = \"interleave\", nodes = \"1..1\" }")
        ),
        "process[0].region[0].policy.nodes",
        "empty node list",
    );
    resolve_err(
        &spec("count = -3", ""),
        "process[0].thread[0].count",
        "negative",
    );
    resolve_err(
        &spec("count = 70000", ""),
        "process[0].thread[0].count",
        "outside the plausible range [0, 65536] threads",
    );
    resolve_err(
        &spec("affinity = \"nodes:1..1\"", ""),
        "process[0].thread[0].affinity",
        "empty CPU set",
    );
    resolve_err(
        &spec("affinity = \"cpu:ncpus\"", ""),
        "process[0].thread[0].affinity",
        "CPU 4 does not exist",
    );
    resolve_err(
        &spec("affinity = \"0-9\"", ""),
        "process[0].thread[0].affinity",
        "CPU 9 does not exist",
    );
    resolve_err(
        &spec("affinity = \"node:nnodes\"", ""),
        "process[0].thread[0].affinity",
        "node 2 does not exist",
    );
    resolve_err(
        &spec("affinity = \"cpus:0..99\"", ""),
        "process[0].thread[0].affinity",
        "goes past 4",
    );
    resolve_err(
        &spec("count = 3\naffinity = \"node:i\"", ""),
        "process[0].thread[0].affinity",
        "node 2 does not exist (nodes are 0..2) (in process a, thread t.2)",
    );
    resolve_err(
        &spec("policy = { mode = \"bind\", nodes = \"i + 5\" }", ""),
        "process[0].thread[0].policy.nodes",
        "node 5 does not exist",
    );
    resolve_err(
        &spec(
            "policy = { mode = \"preferred-many\", nodes = \"0..0\" }",
            "",
        ),
        "process[0].thread[0].policy.nodes",
        "'preferred-many' with an empty node list",
    );
}

#[test]
fn phase_structure_errors() {
    parse_err(&spec("", "{ }"), P0, "exactly one of");
    parse_err(
        &spec("", "{ stream = \"buf\", compute = 1 }"),
        P0,
        "found stream, compute",
    );
    parse_err(
        &spec("", "{ compute = 1, passes = 2 }"),
        &format!("{P0}.passes"),
        "does not apply to a `compute` phase",
    );
    parse_err(
        &spec("", "{ stream = \"buf\", accesses = 2 }"),
        &format!("{P0}.accesses"),
        "does not apply",
    );
    parse_err(
        &spec("", "{ stream = \"nope\" }"),
        &format!("{P0}.stream"),
        "no region named 'nope'",
    );
    parse_err(
        &spec("", "{ random = \"buf\" }"),
        &format!("{P0}.accesses"),
        "needs `accesses`",
    );
    parse_err(
        &spec("", "{ stream = \"buf\", passes = \"(\" }"),
        &format!("{P0}.passes"),
        "unexpected end",
    );
    parse_err(
        &spec("", "{ stream = \"buf\", slice = [0, 2], offset = 0 }"),
        &format!("{P0}.slice"),
        "not both",
    );
    parse_err(
        &spec("", "{ stream = \"buf\", slice = [0] }"),
        &format!("{P0}.slice"),
        "got 1 items",
    );
    parse_err(
        &spec("", "{ stream = \"buf\", slice = [\"i\", \"n +\"] }"),
        &format!("{P0}.slice[1]"),
        "unexpected end",
    );
    parse_err(
        &spec(
            "",
            "{ random = \"buf\", accesses = 1, distribution = \"pareto\" }",
        ),
        &format!("{P0}.distribution"),
        "unknown distribution 'pareto'",
    );
    parse_err(
        &spec(
            "",
            "{ random = \"buf\", accesses = 1, distribution = { zipf = 0 } }",
        ),
        &format!("{P0}.distribution.zipf"),
        "must be > 0",
    );
    parse_err(
        &spec(
            "",
            "{ random = \"buf\", accesses = 1, distribution = { hot = 1.5, probability = 0.5 } }",
        ),
        &format!("{P0}.distribution.hot"),
        "(0, 1]",
    );
    parse_err(
        &spec(
            "",
            "{ random = \"buf\", accesses = 1, distribution = { hot = 0.5, probability = 2 } }",
        ),
        &format!("{P0}.distribution.probability"),
        "[0, 1]",
    );
    parse_err(
        &spec(
            "",
            "{ random = \"buf\", accesses = 1, distribution = { hot = 0.5 } }",
        ),
        &format!("{P0}.distribution"),
        "expected",
    );
    parse_err(
        &spec(
            "",
            "{ random = \"buf\", accesses = 1, write_fraction = 1.5 }",
        ),
        &format!("{P0}.write_fraction"),
        "[0, 1]",
    );
    parse_err(
        &spec("", "{ random = \"buf\", accesses = 1, mlp = 0.5 }"),
        &format!("{P0}.mlp"),
        ">= 1",
    );
    parse_err(
        &spec("", "{ compute = \"1 ms ms\" }"),
        &format!("{P0}.compute"),
        "missing operator",
    );
    parse_err(
        &spec("", "{ set_affinity = \"node:x..\" }"),
        &format!("{P0}.set_affinity"),
        "unexpected character '.'",
    );
    parse_err(
        &spec("", "{ set_mempolicy = \"interleave\" }"),
        &format!("{P0}.set_mempolicy"),
        "needs nodes",
    );
    parse_err(
        &spec("", "{ repeat = 3 }"),
        &format!("{P0}.body"),
        "needs `body`",
    );
    parse_err(
        &spec("", "{ repeat = 3, body = [], range = [0, 1] }"),
        &format!("{P0}.range"),
        "does not apply",
    );
    parse_err(
        &spec("", "{ for = \"k\", body = [] }"),
        &format!("{P0}.range"),
        "needs `range",
    );
    parse_err(
        &spec("", "{ for = \"k\", range = [0, 1, 2], body = [] }"),
        &format!("{P0}.range"),
        "got 3 items",
    );
    parse_err(
        &spec("", "{ for = \"k\", range = [0, 1] }"),
        &format!("{P0}.body"),
        "needs `body`",
    );
    parse_err(
        &spec("", "{ barrier = \"\" }"),
        &format!("{P0}.barrier"),
        "not a barrier name",
    );
    parse_err(
        &spec("", "{ barrier = \"gc\", passes = 2 }"),
        &format!("{P0}.passes"),
        "does not apply to a `barrier` phase",
    );
    parse_err(
        &spec("", "{ for = \"1k\", range = [0, 1], body = [] }"),
        &format!("{P0}.for"),
        "not a variable name",
    );
    parse_err(
        &spec("", "{ for = \"i\", range = [0, 1], body = [] }"),
        &format!("{P0}.for"),
        "shadow",
    );
    parse_err(
        &spec("", "{ for = \"ms\", range = [0, 1], body = [] }"),
        &format!("{P0}.for"),
        "unit name",
    );
    parse_err(
        &spec(
            "",
            "{ for = \"k\", range = [0, 1], body = [{ for = \"k\", range = [0, 1], body = [] }] }",
        ),
        &format!("{P0}.body[0].for"),
        "shadow",
    );
    parse_err(
        &spec("", "{ compute = 1 }, { repeat = 2, body = [{ sleep = 1 }, { stream = \"buf\", mlp = 2 }] }"),
        "process[0].thread[0].phases[1].body[1].mlp",
        "does not apply to a `stream` phase",
    );
}

#[test]
fn phase_values_are_checked_at_resolve() {
    resolve_err(
        &spec("", "{ stream = \"buf\", passes = -1 }"),
        &format!("{P0}.passes"),
        "negative",
    );
    resolve_err(
        &spec("", "{ random = \"buf\", accesses = \"nope\" }"),
        &format!("{P0}.accesses"),
        "unknown variable `nope`",
    );
    resolve_err(
        &spec("", "{ compute = \"4KiB\" }"),
        &format!("{P0}.compute"),
        "size unit",
    );
    resolve_err(
        &spec("", "{ sleep = \"-1ms\" }"),
        &format!("{P0}.sleep"),
        "negative",
    );
    resolve_err(
        &spec("", "{ repeat = \"1 % 0\", body = [] }"),
        &format!("{P0}.repeat"),
        "division by zero",
    );
    resolve_err(
        &spec("", "{ stream = \"buf\", slice = [2, 2] }"),
        &format!("{P0}.slice[0]"),
        "slice index 2 >= of 2",
    );
    resolve_err(
        &spec("", "{ stream = \"buf\", slice = [0, 0] }"),
        &format!("{P0}.slice[1]"),
        "at least 1",
    );
    resolve_err(
        &spec("", "{ stream = \"buf\", slice = [0, 1000] }"),
        &format!("{P0}.slice"),
        "only 256 pages",
    );
    resolve_err(
        &spec("", "{ stream = \"buf\", offset = \"1MiB\" }"),
        &format!("{P0}.offset"),
        "past the end",
    );
    resolve_err(
        &spec(
            "",
            "{ stream = \"buf\", offset = \"512KiB\", len = \"513KiB\" }",
        ),
        &format!("{P0}.len"),
        "past the end",
    );
    resolve_err(
        &spec("", "{ stream = \"buf\", len = 0 }"),
        &format!("{P0}.len"),
        "length 0",
    );
    resolve_err(
        &spec("", "{ set_affinity = \"node:5\" }"),
        &format!("{P0}.set_affinity"),
        "node 5 does not exist",
    );
    resolve_err(
        &spec(
            "",
            "{ set_mempolicy = { mode = \"bind\", nodes = \"nnodes\" } }",
        ),
        &format!("{P0}.set_mempolicy.nodes"),
        "node 2 does not exist",
    );
    resolve_err(
        &spec(
            "",
            "{ for = \"k\", range = [0, 3], body = [{ set_affinity = \"node:k\" }] }",
        ),
        &format!("{P0}.body[0].set_affinity"),
        "node 2 does not exist (nodes are 0..2) (in process a, thread t, k=2)",
    );
    resolve_err(
        &spec("", "{ for = \"k\", range = [0, \"k\"], body = [] }"),
        &format!("{P0}.range[1]"),
        "unknown variable `k`",
    );
    resolve_err(
        &spec("", "{ for = \"k\", range = [0, 1000000000000], body = [] }"),
        P0,
        "more than 4000000 phases",
    );
}

#[test]
fn scale_outside_zero_one_names_the_option() {
    let s = parse(&spec("", "{ compute = 1 }"), ORIGIN).unwrap();
    for f in [0.0, -0.5, 1.0001, 2.0, f64::NAN, f64::INFINITY] {
        let e = resolve(&s, &big(), 0, f).unwrap_err();
        assert!(matches!(e, WorkloadError::Scale(_)));
        assert!(e.to_string().contains("--scale"), "{e}");
    }
    assert!(resolve(&s, &big(), 0, 1.0).is_ok());
    assert!(resolve(&s, &big(), 0, 1e-9).is_ok());
}
