#include "hardware/readers/kernel_classes.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

#include "hardware/readers/json_trace.h"
#include "hardware/readers/test_files.h"

namespace parasim {
namespace {

const KernelClassTable& Table() {
  static const KernelClassTable t = *KernelClassTable::Builtin();
  return t;
}

TEST_CASE("globs match whole names") {
  CHECK(GlobMatch("*gemm*", "ampere_bf16_s16816gemm_bf16_128x128"));
  CHECK(GlobMatch("nvjet_*", "nvjet_sm90_tst"));
  CHECK_FALSE(GlobMatch("nvjet_*", "x_nvjet_sm90"));
  CHECK(GlobMatch("a?c", "abc"));
  CHECK_FALSE(GlobMatch("a?c", "abbc"));
  CHECK(GlobMatch("*a*b*c*", "xxaxxbxxcxx"));
  CHECK_FALSE(GlobMatch("*a*b*c", "xxaxxbxxcxx"));
  CHECK(GlobMatch("*", ""));
  CHECK_FALSE(GlobMatch("", "x"));
}

// Kernel names as the libraries write them, each with its kind and family.
TEST_CASE("the built-in table, kind and family by library") {
  struct Case {
    std::string_view name;
    KernelClass kind;
    std::string_view family;
  };
  const Case cases[] = {
      // NCCL, old and new names; DeepEP as DeepSeek builds it and as released.
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       KernelClass::kCommunication, "NCCL AllReduce"},
      {"ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", KernelClass::kCommunication,
       "NCCL AllGather"},
      {"ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       KernelClass::kCommunication, "NCCL ReduceScatter"},
      {"ncclDevKernel_Reduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       KernelClass::kCommunication, "NCCL Reduce"},
      {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", KernelClass::kCommunication,
       "NCCL SendRecv"},
      {"ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       KernelClass::kCommunication, "NCCL Broadcast"},
      {"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", KernelClass::kCommunication,
       "NCCL"},
      {"void dpsk::ep::internode::dispatch<false, 8, false, 8>(int4*, float*)",
       KernelClass::kCommunication, "DeepEP dispatch"},
      {"void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*)",
       KernelClass::kCommunication, "DeepEP combine"},
      {"void dpsk::ep::internode::notify_dispatch<false, 8>(int const*)",
       KernelClass::kCommunication, "DeepEP notify and layout"},
      {"void dpsk::ep::internode::cached_notify<false>(int, int)", KernelClass::kCommunication,
       "DeepEP notify and layout"},
      {"void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*)",
       KernelClass::kCommunication, "DeepEP notify and layout"},
      {"void deep_ep::internode_ll::dispatch<3, 10, 7168>(void*)", KernelClass::kCommunication,
       "DeepEP dispatch"},
      {"void nvshmemi_proxy_progress_kernel()", KernelClass::kCommunication, "NVSHMEM"},
      {"void userbuffers_fp16_sum_inplace_gpu_rr_rs<8>(int, int)", KernelClass::kCommunication,
       "userbuffers"},
      {"void tensorrt_llm::kernels::oneShotAllReduceKernel<half, 8>(AllReduceParams<half>)",
       KernelClass::kCommunication, "custom all-reduce"},
      // Attention: FA2, FA3 (a CUTLASS template), FlashMLA, cuDNN SDPA and helpers, FMHA.
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >(Flash_fwd_params)",
       KernelClass::kAttention, "FlashAttention"},
      {"void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2> > >()",
       KernelClass::kAttention, "FlashAttention"},
      {"void flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8> >()",
       KernelClass::kAttention, "FlashMLA"},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1",
       KernelClass::kAttention, "cuDNN SDPA"},
      {"void cudnn::fusion::compute_dot_do_o_specialized<true, 128>(void const*)",
       KernelClass::kAttention, "cuDNN SDPA"},
      {"fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)",
       KernelClass::kAttention, "fused MHA"},
      {"void scaled_upper_triang_masked_softmax_warp_forward<c10::BFloat16, 11>(...)",
       KernelClass::kAttention, "attention softmax"},
      // Softmax alone is a normalization, not attention (the ResNet head's log-softmax).
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>()",
       KernelClass::kNormalization, "softmax"},
      {"void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10>()",
       KernelClass::kNormalization, "softmax"},
      // GEMM: cuBLAS, Hopper nvjet, CUTLASS, DeepGEMM, DeepSeek grouped, grouped, convolution.
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", KernelClass::kGemm, "cuBLAS"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_cublas",
       KernelClass::kGemm, "cuBLAS"},
      {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NTT", KernelClass::kGemm, "cuBLAS nvjet"},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x1_tn>()",
       KernelClass::kGemm, "CUTLASS"},
      {"void deep_gemm::fp8_gemm_kernel<4096, 7168, 128, 128, 128, 1, 5>(float*, int*)",
       KernelClass::kGemm, "DeepGEMM"},
      {"void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>()",
       KernelClass::kGemm, "DeepSeek FP8 GEMM"},
      {"void cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel>"
       "(dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel::Params)",
       KernelClass::kGemm, "DeepSeek grouped GEMM (experts)"},
      {"void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_dptp128c_acc::GemmKernel>()",
       KernelClass::kGemm, "DeepSeek FP8 GEMM (accumulating)"},
      {"void cutlass::Kernel<cutlass::gemm::kernel::GemmGrouped<...> >()", KernelClass::kGemm,
       "grouped GEMM"},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128",
       KernelClass::kGemm, "cuDNN convolution"},
      {"void dpsk::grouped_gemm::cuda::utils::transpose<512, 128, 4, 4>(unsigned char const*)",
       KernelClass::kElementwise, "GEMM operand layout"},
      // Norms, element-wise, copies.
      {"void layer_norm::ln_fwd_kernel<layer_norm::Kernel_traits<__nv_bfloat16> >()",
       KernelClass::kNormalization, "norm"},
      {"triton_red_fused_add_native_dropout_native_layer_norm_view_1", KernelClass::kNormalization,
       "norm"},
      {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>()",
       KernelClass::kNormalization, "norm"},
      {"triton_poi_fused_gelu_gelu_backward_view_4", KernelClass::kElementwise, "Triton"},
      {"triton_poi_fused_add_native_dropout_view_3", KernelClass::kElementwise, "Triton"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >()",
       KernelClass::kElementwise, "ATen element-wise"},
      {"rotary_kernel", KernelClass::kElementwise, "rotary embedding"},
      {"void cuda::swiglu_backward<__nv_bfloat16>(void const*, void const*, void*, int, int)",
       KernelClass::kElementwise, "activation"},
      {"void cuda::get_fused_mapping<512>(long const*, int*, int*, int*, int*, int*, int*)",
       KernelClass::kElementwise, "MoE routing"},
      {"void cuda::batched_transpose<512, 128, 1, 1>(unsigned char const*, unsigned char*)",
       KernelClass::kElementwise, "transpose"},
      {"cuda::aux_fi_impl(long const*, float*, int, int, int, int)", KernelClass::kElementwise,
       "other"},
      {"Memcpy DtoD (Device -> Device)", KernelClass::kMemcpy, "memcpy"},
      {"Memset (Device)", KernelClass::kMemset, "memset"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const KernelMatch m = Table().Classify(c.name);
    CHECK(KernelClassName(m.kind) == KernelClassName(c.kind));
    CHECK(m.family == c.family);
  }
}

// Before: PyTorch's SymmetricMemory all-reduce and all-gather kernels were element-wise (a
// "reduction" and "other"), FlashInfer's paged-KV attention was element-wise, and a Triton
// pointwise kernel named after the attention beside it was attention.
TEST_CASE("SymmetricMemory is communication, FlashInfer attention, Triton pointwise element-wise") {
  struct Case {
    std::string name;
    KernelClass kind;
    std::string family;
  };
  const std::vector<Case> cases = {
      {"void c10d::symmetric_memory::one_shot_all_reduce_kernel<c10::BFloat16, 16, 8>("
       "c10::BFloat16**, unsigned long, unsigned long, c10::BFloat16*, unsigned long, unsigned "
       "int**, unsigned long, unsigned long)",
       KernelClass::kCommunication, "PyTorch SymmetricMemory"},
      {"void c10d::symmetric_memory::two_shot_all_reduce_kernel<c10::BFloat16, 16, 8>()",
       KernelClass::kCommunication, "PyTorch SymmetricMemory"},
      {"void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 16, 8>()",
       KernelClass::kCommunication, "PyTorch SymmetricMemory"},
      {"void c10d::symmetric_memory::multimem_all_gather_kernel<16>(char*, char*, unsigned long)",
       KernelClass::kCommunication, "PyTorch SymmetricMemory"},
      // Today's releases: the same kernels in an anonymous namespace.
      {"void (anonymous namespace)::two_shot_all_reduce_kernel_inplace<float, 16, 8>()",
       KernelClass::kCommunication, "PyTorch SymmetricMemory"},
      {"void (anonymous namespace)::multimem_one_shot_all_reduce_kernel<float, 16>()",
       KernelClass::kCommunication, "PyTorch SymmetricMemory"},
      {"void flashinfer::BatchPrefillWithPagedKVCacheKernel<(flashinfer::MaskMode)1, 128u, 1u, "
       "8u, 16u>(...)",
       KernelClass::kAttention, "FlashInfer"},
      {"void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u>()",
       KernelClass::kAttention, "FlashInfer"},
      {"void flashinfer::BatchPrefillWithRaggedKVCacheKernel<KTraits, Params>(Params)",
       KernelClass::kAttention, "FlashInfer"},
      {"void flashinfer::SinglePrefillWithKVCacheKernel<KTraits, Params>(Params)",
       KernelClass::kAttention, "FlashInfer"},
      {"void flashinfer::MergeStatesKernel<8u, 16u, 2u, 4u, __nv_bfloat16>()",
       KernelClass::kAttention, "FlashInfer"},
      {"triton_poi_fused__scaled_dot_product_efficient_attention_0", KernelClass::kElementwise,
       "Triton"},
      {"triton_poi_fused_all_gather_into_tensor_copy_0", KernelClass::kElementwise, "Triton"},
      {"triton_poi_fused_native_layer_norm_1", KernelClass::kElementwise, "Triton"},
      // Triton's reductions keep their kinds.
      {"triton_per_fused__softmax_0", KernelClass::kNormalization, "softmax"},
      // FlashInfer's other kernels are not attention.
      {"void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>()", KernelClass::kNormalization,
       "norm"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const KernelMatch m = Table().Classify(c.name);
    CHECK(KernelClassName(m.kind) == KernelClassName(c.kind));
    CHECK(m.family == c.family);
  }
}

TEST_CASE("the trace's category decides copies and memsets") {
  CHECK(Table().Classify("anything", GpuEventCategory::kMemcpy).kind == KernelClass::kMemcpy);
  CHECK(Table().Classify("anything", GpuEventCategory::kMemset).kind == KernelClass::kMemset);
  CHECK(Table().Classify("nvjet_x", GpuEventCategory::kKernel).kind == KernelClass::kGemm);
}

TEST_CASE("a user file goes first, or replaces the table") {
  const std::string p = testing::TempFile("classes.yaml");
  testing::WriteText(p, R"(classes:
  - {kind: communication, family: my all-to-all, match: "*my_a2a*"}
  - {kind: gemm, match: ["*SoftMax*"]}  # a deliberately odd rule: the user's wins
)");
  auto t = LoadKernelClasses(p);
  REQUIRE(t.ok());
  CHECK(t->Classify("void my_a2a_kernel()").family == "my all-to-all");
  CHECK(t->Classify("cunn_SoftMaxForward").kind == KernelClass::kGemm);
  CHECK(t->Classify("cunn_SoftMaxForward").family == "gemm");
  CHECK(t->Classify("nvjet_sm90").family == "cuBLAS nvjet");  // built-in rows follow
  testing::WriteText(p, "replace: true\nclasses:\n  - {kind: gemm, match: \"*\"}\n");
  auto only = LoadKernelClasses(p);
  REQUIRE(only.ok());
  CHECK(only->rows().size() == 1);
  CHECK(only->Classify("ncclKernel_x").kind == KernelClass::kGemm);
}

TEST_CASE("a bad user file is an error with its location") {
  const std::string p = testing::TempFile("bad.yaml");
  struct Case {
    std::string text, says;
  };
  for (const Case& c : {Case{"classes:\n  - {kind: matmul, match: \"*\"}\n", "expected"},
                        Case{"classes:\n  - {kind: gemm}\n", "match"},
                        Case{"classes:\n  - {kind: gemm, match: [\"\"]}\n", "empty pattern"},
                        Case{"classes: 3\n", "expected a list"}, Case{"rows: []\n", "rows"}}) {
    CAPTURE(c.text);
    testing::WriteText(p, c.text);
    auto t = LoadKernelClasses(p);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message().find(p + ":") == 0);
    CHECK(t.status().message().find(c.says) != std::string::npos);
  }
  CHECK_FALSE(LoadKernelClasses("/dev/zero").ok());
}

TEST_CASE("every kernel of the recorded H100 trace gets the kind the old classifier gave") {
  // tests/traces/h100-mcore-1.7b-mb4: 1,825 GPU events; GEMM (nvjet), attention (cuDNN SDPA and
  // its helpers), and the rest element-wise, copies and memsets, or norms (Triton layer norms).
  auto t = ReadJsonTrace("tests/traces/h100-mcore-1.7b-mb4.json.gz");
  REQUIRE(t.ok());
  const std::vector<KernelMatch> m = Table().ClassifyNames(*t);
  std::map<KernelClass, int64_t> ns;
  for (const GpuEvent& e : t->events) ns[m[e.name].kind] += e.dur_ns;
  CHECK(t->events.size() == 1825);
  // The sums tests/traces/README.md states: GEMM 201.528 ms, attention 54.974 ms, element-wise
  // 91.520 ms (copies, memsets and norms included there).
  CHECK(ns[KernelClass::kGemm] == doctest::Approx(201.528e6).epsilon(1e-5));
  CHECK(ns[KernelClass::kAttention] == doctest::Approx(54.974e6).epsilon(1e-5));
  CHECK(ns[KernelClass::kElementwise] + ns[KernelClass::kNormalization] + ns[KernelClass::kMemcpy] +
            ns[KernelClass::kMemset] ==
        doctest::Approx(91.520e6).epsilon(1e-5));
  CHECK(ns[KernelClass::kNormalization] > 0);
}

}  // namespace
}  // namespace parasim
