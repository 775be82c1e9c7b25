//! What a set of samples describes, a whole GPU or one MIG instance: it picks the
//! metric prefix and the words of the HELP text, so the `poolprof_mig_…` families say
//! what they measure instead of repeating the GPU's text.

/// A whole GPU or one MIG instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `poolprof_gpu_…`.
    Gpu,
    /// `poolprof_mig_…`.
    MigInstance,
}

impl Scope {
    /// The metric name for `suffix`, e.g. `poolprof_mig_sm_active_ratio`.
    pub fn metric(self, suffix: &str) -> String {
        match self {
            Scope::Gpu => format!("poolprof_gpu_{suffix}"),
            Scope::MigInstance => format!("poolprof_mig_{suffix}"),
        }
    }

    /// `template` with each `{the}` replaced by "the GPU" or "the MIG instance".
    pub fn help(self, template: &str) -> String {
        let the = match self {
            Scope::Gpu => "the GPU",
            Scope::MigInstance => "the MIG instance",
        };
        template.replace("{the}", the)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_help_follow_the_scope() {
        assert_eq!(Scope::Gpu.metric("x_ratio"), "poolprof_gpu_x_ratio");
        assert_eq!(Scope::MigInstance.metric("x_ratio"), "poolprof_mig_x_ratio");
        assert_eq!(
            Scope::MigInstance.help("Busy share of {the}."),
            "Busy share of the MIG instance."
        );
    }
}
