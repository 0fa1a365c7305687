// SPDX-License-Identifier: Apache-2.0
#include "sim/workload/train_script.h"

namespace warpscope::sim::workload {

// A small training (or serving) loop in the shape of a PyTorch program: modules whose forward
// methods launch kernels through `simcuda` (the C launch functions of demo_workload.cc), a data
// loader that decodes images on the CPU, an optimizer step and a gradient all-reduce. Kernel
// names are those cuBLAS, FlashAttention, NCCL and PyTorch report on an H100; durations (µs) are
// of the order they take there. Which parts run is the workload's choice (simcuda.workload()).
const char kTrainScript[] = R"py(
import simcuda as cuda

WORKLOAD = cuda.workload()
FP32 = WORKLOAD == "fp32-training"

GEMM_BF16 = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1"
             "_execute_segment_k_off_kernel__5x_cublas")
GEMM_BF16_NN = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1"
                "_execute_segment_k_off_kernel__5x_cublas")
SGEMM = "ampere_sgemm_128x64_tn"
SGEMM_NN = "ampere_sgemm_128x128_nn"
FLASH_FWD = "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(Flash_fwd_params)"
FLASH_BWD = "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, true, false, false, false, false, true, false>(Flash_bwd_params)"
FLASH_DECODE = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, false, false>(Flash_fwd_params)"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GELU = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)"
LAYERNORM = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"
SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)"
ADAM = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, float, float, float, float, float, float, bool*, float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, float, float, float, float, float, float, bool*, float*)"
TOPK = "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float const, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, float*)"


class Linear:
    def __init__(self, us):
        self.us = us

    def forward(self):
        cuda.launch(SGEMM if FP32 else GEMM_BF16, self.us * (3 if FP32 else 1))

    def backward(self):
        cuda.launch(SGEMM_NN if FP32 else GEMM_BF16_NN, 2 * self.us * (3 if FP32 else 1))


class Attention:
    def forward(self):
        cuda.launch(FLASH_FWD, 140)

    def backward(self):
        cuda.launch(FLASH_BWD, 390)


class Block:
    def __init__(self):
        self.qkv = Linear(120)
        self.attn = Attention()
        self.proj = Linear(45)
        self.mlp_up = Linear(160)
        self.mlp_down = Linear(160)

    def forward(self):
        cuda.launch(LAYERNORM, 12)
        self.qkv.forward()
        self.attn.forward()
        self.proj.forward()
        cuda.launch(ADD, 9)
        cuda.launch(LAYERNORM, 12)
        self.mlp_up.forward()
        cuda.launch(GELU, 18)
        self.mlp_down.forward()
        cuda.launch(ADD, 9)

    def backward(self):
        self.mlp_down.backward()
        cuda.launch(GELU, 20)
        self.mlp_up.backward()
        self.proj.backward()
        self.attn.backward()
        self.qkv.backward()


class Model:
    def __init__(self, layers):
        self.blocks = [Block() for _ in range(layers)]

    def forward(self):
        for b in self.blocks:
            b.forward()
        cuda.launch(SOFTMAX, 30)

    def backward(self):
        for b in reversed(self.blocks):
            b.backward()


def all_reduce_gradients(buckets):
    for _ in range(buckets):
        cuda.all_reduce(ALLREDUCE, 260)


def optimizer_step():
    cuda.launch(ADAM, 95)


def decode_jpeg(size):
    # Huffman decoding in Python, the inverse DCT in native code (as PIL / libjpeg-turbo).
    bits = 0
    for i in range(size):
        bits = (bits * 31 + i) & 0xFFFF
    return cuda.decode_image(size * 40) + bits


def augment(pixels):
    return (pixels * 7 + 3) & 0xFF


def load_batch(images):
    return [augment(decode_jpeg(2500)) for _ in range(images)]


def train_step(model, step):
    if WORKLOAD == "dataloader":
        load_batch(24)
    model.forward()
    model.backward()
    all_reduce_gradients(4)
    optimizer_step()


# DistributedDataParallel: 4 gradient buckets, each all-reduced by the reducer's hook as soon as
# the backward pass has filled it, so the all-reduces overlap the rest of the backward pass; the
# optimizer waits for all of them. 400 MiB bf16 buckets at ~2 ms each on NVLink.
BUCKET_ELEMENTS = 200 * 1024 * 1024
BUCKET_ALLREDUCE_US = 2000


def ddp_step(model):
    model.forward()
    for block in reversed(model.blocks):
        block.backward()
        cuda.all_reduce(ALLREDUCE, BUCKET_ALLREDUCE_US, BUCKET_ELEMENTS)
    cuda.wait_all_reduces()
    optimizer_step()


def ddp_main(model):
    # Micro-batches of 8 sequences: every kernel 8x the training workload's.
    cuda.set_time_scale(8)
    cuda.ddp_dry_run(True)
    ddp_step(model)
    cuda.ddp_dry_run(False)
    # torch.profiler's schedule: one ProfilerStep#N range per step.
    while cuda.running():
        step = cuda.ddp_step_begin()
        if step is None:
            break
        ddp_step(model)
        cuda.ddp_step_end()


def memory_bound_step():
    for _ in range(40):
        cuda.launch(ADD, 55)
        cuda.launch(LAYERNORM, 70)
        cuda.launch(REDUCE, 48)


def decode_step(model):
    for b in model.blocks:
        b.qkv.forward()
        cuda.launch(FLASH_DECODE, 22)
        b.mlp_up.forward()
        b.mlp_down.forward()
    cuda.launch(SOFTMAX, 6)
    cuda.launch(TOPK, 9)


def main():
    model = Model(4)
    if WORKLOAD == "ddp":
        ddp_main(model)
        return
    step = 0
    while cuda.running():
        if WORKLOAD == "memory-bound":
            memory_bound_step()
        elif WORKLOAD == "inference":
            decode_step(model)
        else:
            train_step(model, step)
        cuda.synchronize()
        step += 1


main()
)py";

}  // namespace warpscope::sim::workload
