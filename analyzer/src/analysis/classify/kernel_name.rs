//! A kernel's likely class from its name, for when no per-kernel counters exist.
//!
//! Library kernels say what they do: cuBLAS, CUTLASS and cuDNN name their matrix
//! multiplies and convolutions (`gemm`, `xmma`, `nvjet`, `conv`, `wgrad`), attention
//! kernels say `flash` or `fmha`, and PyTorch's elementwise, reduction, copy and
//! indexing kernels, and TorchInductor's pointwise and reduction kernels
//! (`triton_poi_`, `triton_red_`, `triton_per_`), move bytes rather than compute. A
//! name is a guess, not a measurement: a matrix multiply at batch 1 streams its
//! weights and is memory-bound in fact. Outputs label the guess as one
//! (`class_from: "name"`).

use crate::analysis::classify::Boundedness;

/// Name fragments (lower case) of kernels that stream memory even though they multiply
/// matrices; checked before [`COMPUTE`].
pub const MEMORY_FIRST: [&str; 3] = ["gemv", "splitkreduce", "reduce_kernel"];

/// Name fragments of matrix multiplies, convolutions and attention: compute-bound.
pub const COMPUTE: [&str; 15] = [
    "gemm",
    "xmma",
    "nvjet",
    "cutlass",
    "matmul",
    "conv",
    "wgrad",
    "dgrad",
    "winograd",
    "flash",
    "fmha",
    "attention",
    "mma_",
    "triton_tem_",
    "scudnn",
];

/// Name fragments of elementwise, reduction, copy, normalization and indexing kernels:
/// memory-bound.
pub const MEMORY: [&str; 24] = [
    "elementwise",
    "vectorized",
    "unrolled",
    "reduce",
    "copy",
    "fill",
    "catarray",
    "index",
    "gather",
    "scatter",
    "embedding",
    "softmax",
    "norm",
    "dropout",
    "transpose",
    "multi_tensor",
    "adam",
    "cross_entropy",
    "nll_loss",
    "sort",
    "topk",
    "triton_poi_",
    "triton_red_",
    "triton_per_",
];

/// The class a kernel's name suggests: compute- or memory-bound, or None when the name
/// says nothing (and for `other`, the folded rest).
pub fn class_by_name(name: &str) -> Option<Boundedness> {
    let n = name.to_ascii_lowercase();
    let has = |fragments: &[&str]| fragments.iter().any(|f| n.contains(f));
    if has(&MEMORY_FIRST) {
        Some(Boundedness::MemoryBound)
    } else if has(&COMPUTE) {
        Some(Boundedness::ComputeBound)
    } else if has(&MEMORY) {
        Some(Boundedness::MemoryBound)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_kernels_of_the_h100_suite_are_named_for_what_they_do() {
        // names as the exporter shortens them (docs/kernels.md)
        let compute = [
            "cutlass::Kernel2<cutlass_80_tensorop_bf16_gemm_64x64_tn>",
            "nvjet_tst_192x192_64x3_1x2_h_bz_coopA_TNT",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
            "pytorch_flash::flash_fwd_kernel",
            "cudnn::implicit_convolve_sgemm",
        ];
        for name in compute {
            assert_eq!(
                class_by_name(name),
                Some(Boundedness::ComputeBound),
                "{name}"
            );
        }
        let memory = [
            "native::vectorized_elementwise_kernel",
            "native::reduce_kernel",
            "native::indexSelectLargeIndex",
            "native::embedding_backward_feature_kernel",
            "native::(anonymous namespace)::cunn_SoftMaxForward",
            "native::vectorized_layer_norm_kernel",
            "gemv2T_kernel_val",
            "triton_poi_fused_add_mul_0",
            "native::CatArrayBatchedCopy",
        ];
        for name in memory {
            assert_eq!(
                class_by_name(name),
                Some(Boundedness::MemoryBound),
                "{name}"
            );
        }
    }

    #[test]
    fn names_that_say_nothing_and_the_folded_rest_are_unknown() {
        assert_eq!(class_by_name("other"), None);
        assert_eq!(class_by_name("my_custom_kernel"), None);
        assert_eq!(class_by_name(""), None);
    }
}
