//! Behaviour of the simulated backend as a collector (or a user) sees it.

use super::*;
use crate::backend::{Identity, ReadError};
use std::path::Path;

const GIB: u64 = 1 << 30;

/// The built-in scenario of `n` GPUs on a clock the test moves.
fn manual(n: u32) -> (SimBackend, ManualClock) {
    let clock = ManualClock::new();
    let backend = SimBackend::new(
        Scenario::builtin(n).expect("valid"),
        SimClock::Manual(clock.clone()),
    );
    (backend, clock)
}

fn device(backend: &SimBackend, index: usize) -> Arc<dyn Device> {
    backend.devices()[index].clone()
}

fn sm_active(d: &dyn Device) -> f64 {
    d.gpm().expect("gpm").sm_active.expect("sm_active")
}

fn demo_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/demo.toml")
}

#[test]
fn with_gpus_assigns_the_workloads_round_robin() {
    let backend = SimBackend::with_gpus(7).expect("7 GPUs");
    assert_eq!(backend.kind(), "sim");
    let kinds: Vec<&str> = backend
        .sim_devices()
        .iter()
        .map(|d| d.spec().kind())
        .collect();
    assert_eq!(
        kinds,
        [
            "training",
            "inference",
            "idle",
            "memory_bound",
            "failing",
            "mig",
            "training"
        ]
    );
    let ids: Vec<Identity> = backend
        .devices()
        .iter()
        .map(|d| d.identity().expect("identity"))
        .collect();
    assert_eq!(ids[3].uuid, "GPU-00000000-0000-4000-8000-000000000003");
    assert_eq!(ids[0].name, "NVIDIA H100 80GB HBM3");
    assert_eq!(ids[0].pci_bus_id, "00000000:18:00.0");
    let uuids: std::collections::BTreeSet<_> = ids.iter().map(|i| &i.uuid).collect();
    let buses: std::collections::BTreeSet<_> = ids.iter().map(|i| &i.pci_bus_id).collect();
    assert_eq!((uuids.len(), buses.len()), (7, 7));
}

#[test]
fn gpu_count_outside_1_to_64_is_refused_with_the_flag_named() {
    for n in [0, 65] {
        let err = SimBackend::with_gpus(n)
            .expect_err("out of range")
            .to_string();
        assert!(err.starts_with("--simulate: "), "{err}");
        assert!(err.contains(&format!("got {n}")), "{err}");
    }
    assert_eq!(SimBackend::with_gpus(64).expect("64").devices().len(), 64);
}

#[test]
fn same_time_gives_same_values_on_separate_backends() {
    let (a, clock_a) = manual(6);
    let (b, clock_b) = manual(6);
    for t in [0.0, 3.5, 100.0, 1234.25] {
        clock_a.set(t);
        clock_b.set(t);
        for i in [0, 1, 3, 5] {
            let (da, db) = (device(&a, i), device(&b, i));
            assert_eq!(da.gpm(), db.gpm());
            assert_eq!(da.power_usage_watts(), db.power_usage_watts());
            assert_eq!(da.energy_joules(), db.energy_joules());
            assert_eq!(da.processes(), db.processes());
            assert_eq!(da.nvlinks(), db.nvlinks());
        }
    }
    // Reading out of order (the cache goes back to zero) gives the same answer.
    clock_a.set(50.0);
    let later = device(&a, 0).energy_joules();
    clock_a.set(10.0);
    device(&a, 0).energy_joules().expect("energy");
    clock_a.set(50.0);
    assert_eq!(device(&a, 0).energy_joules(), later);
}

#[test]
fn training_period_is_visible_in_sm_activity_and_power() {
    let (backend, clock) = manual(1);
    let gpu = device(&backend, 0);
    let at = |t: f64| {
        clock.set(t);
        (
            sm_active(gpu.as_ref()),
            gpu.gpm().unwrap().tensor_any.unwrap(),
        )
    };
    for t in [12.0, 200.0, 250.0, 290.0] {
        assert_eq!(at(t), at(t + 300.0), "t = {t}");
    }
    let (compute_sm, compute_tensor) = at(120.0);
    let (dip_sm, dip_tensor) = at(270.0);
    assert!(compute_sm > 0.85 && compute_tensor > 0.6);
    assert!(dip_sm < 0.1 && dip_tensor < 0.05);
    clock.set(120.0);
    let busy_power = gpu.power_usage_watts().unwrap();
    let busy_clock = gpu.clocks().unwrap();
    clock.set(270.0);
    let dip_power = gpu.power_usage_watts().unwrap();
    assert!(busy_power > 550.0 && busy_power <= 700.0, "{busy_power}");
    assert!(dip_power < 200.0, "{dip_power}");
    let sm_hz = busy_clock.iter().find(|c| c.clock == "sm").unwrap().hz;
    assert_eq!(sm_hz, 1980e6);
}

#[test]
fn idle_gpu_has_no_processes_and_idles_at_70_watts_and_345_mhz() {
    let (backend, clock) = manual(3);
    clock.set(77.0);
    let idle = device(&backend, 2);
    assert_eq!(idle.processes().unwrap(), vec![]);
    assert_eq!(sm_active(idle.as_ref()), 0.0);
    let watts = idle.power_usage_watts().unwrap();
    assert!((65.0..=75.0).contains(&watts), "{watts}");
    let sm = idle.clocks().unwrap();
    assert_eq!(sm.iter().find(|c| c.clock == "sm").unwrap().hz, 345e6);
    assert_eq!(sm.iter().find(|c| c.clock == "memory").unwrap().hz, 2619e6);
    assert!(idle
        .clock_event_reasons()
        .unwrap()
        .iter()
        .any(|(n, on)| n == "gpu_idle" && on));
    let temps = idle.temperatures().unwrap();
    assert!(temps.iter().all(|t| (30.0..=75.0).contains(&t.celsius)));
}

#[test]
fn processes_carry_pids_workloads_and_their_memory() {
    let (backend, clock) = manual(1);
    clock.set(30.0);
    let processes = device(&backend, 0).processes().unwrap();
    assert_eq!(processes.len(), 1);
    let p = &processes[0];
    assert_eq!((p.pid, p.workload.as_deref()), (4001, Some("llm-pretrain")));
    assert_eq!(p.used_memory_bytes, Some(60 * GIB));
    let memory = device(&backend, 0).memory().unwrap();
    assert_eq!(memory.total_bytes, 80 * GIB);
    assert_eq!(memory.used_bytes, 60 * GIB);
    assert_eq!(
        memory.free_bytes + memory.used_bytes + memory.reserved_bytes.unwrap(),
        memory.total_bytes
    );
}

#[test]
fn memory_bound_gpu_has_dram_high_and_tensor_low() {
    let (backend, clock) = manual(4);
    clock.set(500.0);
    let m = device(&backend, 3).gpm().unwrap();
    assert!(
        m.dram_active.unwrap() > 0.8 && m.tensor_any.unwrap() < 0.05,
        "{m:?}"
    );
}

#[test]
fn failing_gpu_is_lost_in_its_window_and_recovers() {
    let (backend, clock) = manual(6);
    let failing = device(&backend, 4);
    clock.set(9.0);
    assert!(failing.power_usage_watts().is_ok());
    assert!(backend.drain_xid_events().is_empty());
    for t in [10.0, 100.0, 309.9] {
        clock.set(t);
        assert!(matches!(
            failing.power_usage_watts(),
            Err(ReadError::GpuLost(_))
        ));
        assert!(matches!(failing.identity(), Err(ReadError::GpuLost(_))));
        assert!(matches!(failing.processes(), Err(ReadError::GpuLost(_))));
        assert!(
            device(&backend, 0).power_usage_watts().is_ok(),
            "others keep working"
        );
    }
    clock.set(11.0);
    let events = backend.drain_xid_events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].xid, events[0].uuid.as_str()),
        (79, "GPU-00000000-0000-4000-8000-000000000004")
    );
    clock.set(50.0);
    assert!(backend.drain_xid_events().is_empty(), "drained once");
    clock.set(310.0);
    assert!(failing.power_usage_watts().is_ok());
    assert_eq!(failing.processes().unwrap().len(), 1);
}

#[test]
fn mig_gpu_lists_its_instances_with_memory_and_gpm() {
    let (backend, clock) = manual(6);
    clock.set(60.0);
    let mig = device(&backend, 5);
    let instances = mig.mig_instances().unwrap();
    let profiles: Vec<(u32, &str)> = instances
        .iter()
        .map(|i| (i.gpu_instance_id, i.profile.as_str()))
        .collect();
    assert_eq!(profiles, [(1, "3g.40gb"), (2, "2g.20gb"), (3, "2g.20gb")]);
    let first = instances[0].memory.unwrap();
    assert_eq!((first.total_bytes, first.used_bytes), (40 * GIB, 30 * GIB));
    let tensor = instances[0].gpm.unwrap().tensor_any.unwrap();
    assert!(tensor > 0.6, "3g.40gb trains at 60 s: {tensor}");
    assert_eq!(instances[2].gpm.unwrap().sm_active, Some(0.0));
    assert_eq!(mig.utilization(), Err(ReadError::NotSupported));
    let processes = mig.processes().unwrap();
    assert_eq!(processes.len(), 2);
    assert!(processes
        .iter()
        .all(|p| p.gpu_instance_id.is_some() && p.sm_ratio.is_none()));
    assert_eq!(device(&backend, 0).mig_instances().unwrap(), vec![]);
}

#[test]
fn energy_counter_grows_at_the_reported_power() {
    let (backend, clock) = manual(2);
    for index in 0..2 {
        let gpu = device(&backend, index);
        let mut last = 0.0;
        let (mut power_sum, mut samples) = (0.0, 0);
        for t in 0..=900 {
            clock.set(f64::from(t));
            let energy = gpu.energy_joules().unwrap();
            assert!(energy >= last, "GPU {index}: energy fell at {t} s");
            last = energy;
            if t < 900 {
                power_sum += gpu.power_usage_watts().unwrap();
                samples += 1;
            }
        }
        clock.set(0.0);
        let first = gpu.energy_joules().unwrap();
        let mean_power = power_sum / f64::from(samples);
        let rate = (last - first) / 900.0;
        assert!(
            (rate - mean_power).abs() < 0.01 * mean_power,
            "{rate} vs {mean_power}"
        );
    }
    clock.set(100.0);
    let links = device(&backend, 0).nvlinks().unwrap();
    assert_eq!(links.len(), 18);
    assert!(links[0].tx_bytes.unwrap() > 0);
}

#[test]
fn demo_scenario_file_is_the_builtin_six() {
    let demo = Scenario::from_file(&demo_path()).expect("demo.toml parses");
    assert_eq!(demo, Scenario::builtin(6).unwrap());
}

/// Parses `text` as a file named `scenario.toml`, expecting an error.
fn error_of(text: &str) -> String {
    Scenario::from_toml(text, "scenario.toml")
        .expect_err("invalid scenario")
        .to_string()
}

#[test]
fn bad_scenarios_name_the_file_and_the_field() {
    let cases = [
        (
            "[[gpus]]\nkind = \"idle\"\n[[gpus]]\nkind = \"training\"\nperiod_seconds = -5\n",
            "scenario.toml: gpus[1].period_seconds: must be > 0",
        ),
        (
            "[[gpus]]\nkind = \"training\"\nperod_seconds = 300\n",
            "scenario.toml: gpus[0]: unknown field `perod_seconds`",
        ),
        (
            "[[gpus]]\nkind = \"gaming\"\n",
            "scenario.toml: gpus[0].kind: unknown workload kind `gaming`",
        ),
        ("gpus = []\n", "scenario.toml: gpus: a scenario has 1 to 64 GPUs (got 0)"),
        ("", "scenario.toml: "),
        (
            "[[gpus]]\nkind = \"idle\"\nfail_at_seconds = 3\n",
            "scenario.toml: gpus[0].fail_at_seconds: not a parameter of kind `idle`",
        ),
        (
            "[[gpus]]\nkind = \"training\"\nduty = 1.5\n",
            "scenario.toml: gpus[0].duty: must be between 0 and 1",
        ),
        (
            "[[gpus]]\nkind = \"failing\"\nfail_at_seconds = 50\nrecover_at_seconds = 20\n",
            "scenario.toml: gpus[0].recover_at_seconds: must be after fail_at_seconds",
        ),
        (
            "[[gpus]]\nkind = \"memory_bound\"\nmemory_used_gib = 81\n",
            "scenario.toml: gpus[0].memory_used_gib: must be between 0 and 79.5 GiB (got 81)",
        ),
        (
            "[[gpus]]\nkind = \"mig\"\n[[gpus.instances]]\nprofile = \"3g.41gb\"\n",
            "scenario.toml: gpus[0].instances[0].profile: unknown MIG profile `3g.41gb`",
        ),
        (
            "[[gpus]]\nkind = \"mig\"\ninstances = [{ profile = \"4g.40gb\" }, { profile = \"4g.40gb\" }]\n",
            "scenario.toml: gpus[0].instances: the profiles use 8 compute slices",
        ),
        (
            "[[gpus]]\nkind = \"mig\"\n",
            "scenario.toml: gpus[0].instances: a mig GPU needs at least one instance",
        ),
        (
            "[[gpus]]\nkind = \"training\"\nprocesses = [{ pid = 7 }, { pid = 7 }]\n",
            "scenario.toml: gpus[0].processes: pid 7 appears twice",
        ),
        (
            "[[gpus]]\nkind = \"training\"\nprocesses = [{ pid = 0 }]\n",
            "scenario.toml: gpus[0].processes[0].pid: must be 1 to 4194304",
        ),
        (
            "[[gpus]]\nkind = \"training\"\nprocesses = [{ pid = 8, workload = \"\" }]\n",
            "scenario.toml: gpus[0].processes[0].workload: must be 1 to 128 printable",
        ),
        (
            "[[gpus]]\nkind = \"training\"\nprocesses = [{ pid = -1 }]\n",
            "scenario.toml: gpus[0].processes.pid: invalid value: integer `-1`",
        ),
        (
            "[[gpus]]\nkind = 3\n",
            "scenario.toml: gpus[0].kind: invalid type: integer `3`, expected a string",
        ),
        (
            "[[gpu]]\nkind = \"idle\"\n",
            "scenario.toml: TOML parse error at line 1",
        ),
    ];
    for (text, expected) in cases {
        let err = error_of(text);
        assert!(
            err.starts_with(expected),
            "for {text:?}\n got: {err}\nwant: {expected}"
        );
    }
    let too_many = "[[gpus]]\nkind = \"idle\"\n".repeat(65);
    assert!(error_of(&too_many).contains("gpus: a scenario has 1 to 64 GPUs (got 65)"));
}

#[test]
fn missing_scenario_file_names_the_path() {
    let err = Scenario::from_file(Path::new("no/such/scenario.toml"))
        .expect_err("missing")
        .to_string();
    assert!(
        err.starts_with("no/such/scenario.toml: cannot read"),
        "{err}"
    );
}

#[test]
fn omitted_parameters_take_documented_defaults() {
    let text = "[[gpus]]\nkind = \"training\"\n[[gpus]]\nkind = \"mig\"\n[[gpus.instances]]\nprofile = \"1g.10gb\"\nkind = \"inference\"\n";
    let scenario = Scenario::from_toml(text, "defaults.toml").expect("valid");
    let scenario::GpuMode::Whole(tenant) = &scenario.gpus[0].mode else {
        panic!("training is a whole GPU")
    };
    assert_eq!(
        tenant.load,
        workload::Load::Training {
            period_seconds: 300.0,
            duty: 0.8
        }
    );
    assert_eq!(tenant.memory_used_bytes, 60 * GIB);
    assert_eq!(tenant.processes[0].workload, "training-gpu0");
    assert_eq!(tenant.processes[0].pid, 10_001);
    let scenario::GpuMode::Mig(instances) = &scenario.gpus[1].mode else {
        panic!("mig")
    };
    assert_eq!(
        instances[0].tenant.memory_used_bytes,
        (6.0 * GIB as f64) as u64
    );
    assert_eq!(instances[0].tenant.processes[0].workload, "mig-gpu1-gi1");
}

#[test]
fn every_shipped_scenario_and_the_documented_example_parse() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut parsed = 0;
    for entry in std::fs::read_dir(&folder).expect("scenarios folder") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
            parsed += 1;
        }
    }
    assert!(parsed >= 2, "{parsed} scenario files");
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/scenario.md");
    let doc = std::fs::read_to_string(doc).expect("docs/scenario.md");
    let example = doc
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a toml example in docs/scenario.md");
    let scenario =
        Scenario::from_toml(example, "docs/scenario.md").unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<&str> = scenario.gpus.iter().map(|g| g.kind()).collect();
    assert_eq!(kinds, ["training", "failing", "mig"]);
}

#[test]
fn fast_failure_scenario_fails_at_3_and_recovers_at_20_seconds() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/fast-failure.toml");
    let clock = ManualClock::new();
    let backend = SimBackend::new(
        Scenario::from_file(&path).expect("parses"),
        SimClock::Manual(clock.clone()),
    );
    let failing = device(&backend, 1);
    for (t, lost) in [(2.9, false), (3.0, true), (19.9, true), (20.0, false)] {
        clock.set(t);
        assert_eq!(failing.memory().is_err(), lost, "at {t} s");
    }
}
