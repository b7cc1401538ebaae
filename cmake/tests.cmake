# Test registration. Every test is a script that prints its own per-case lines and a closing
# "N passed, M failed" line. Tests labelled `sanitize` are run again by scripts/test.sh against the
# ASan/UBSan build, since they feed bdc untrusted or unusual input.
set(BDC_TEST_CACHE "${CMAKE_SOURCE_DIR}/build/cache" CACHE PATH
    "Where tests cache exported models and extracted test data (shared by all build folders)")
set(BDC_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with onnx/onnxruntime/torch for tests")

set(bdc_test_env "BDC=$<TARGET_FILE:bdc>" "BDC_CACHE=${BDC_TEST_CACHE}"
    "BDC_MODEL_CACHE=${BDC_TEST_CACHE}/models")
if(BDC_SANITIZE)
  list(APPEND bdc_test_env "BDC_SANITIZED=1"
       "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99"
       "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98")
endif()

function(bdc_add_test name)
  cmake_parse_arguments(T "" "" "COMMAND;LABELS" ${ARGN})
  add_test(NAME ${name} COMMAND ${T_COMMAND} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${bdc_test_env}" LABELS "${T_LABELS}")
endfunction()

bdc_add_test(cli COMMAND bash tests/test_cli.sh $<TARGET_FILE:bdc> LABELS "sanitize")
bdc_add_test(malformed COMMAND bash tests/test_malformed.sh $<TARGET_FILE:bdc> LABELS "sanitize")
bdc_add_test(node_shapes COMMAND ${BDC_PYTHON} tests/test_node_shapes.py LABELS "sanitize")
bdc_add_test(real_models COMMAND ${BDC_PYTHON} tests/test_real_models.py LABELS "sanitize")
bdc_add_test(node_run COMMAND ${BDC_PYTHON} tests/test_node_run.py LABELS "sanitize")
# The node suite as a user runs it, every graph input fed at run time (after node_run, whose
# compiled cases it mostly reuses from the cache).
bdc_add_test(node_run_runtime_inputs COMMAND ${BDC_PYTHON} tests/test_node_run.py --inputs runtime)
set_tests_properties(node_run_runtime_inputs PROPERTIES DEPENDS node_run)
bdc_add_test(lib COMMAND bash tests/test_lib.sh $<TARGET_FILE:bdc> LABELS "sanitize")
bdc_add_test(determinism COMMAND bash tests/test_determinism.sh $<TARGET_FILE:bdc> LABELS "sanitize")
# Real models in the default modes (fusion block, block schedule), also in two random block orders of
# the runtime's schedule test mode each (NaN-poisoned intermediates: the analysis' verifier).
bdc_add_test(real_run COMMAND ${BDC_PYTHON} tests/test_real_run.py --check-seeds 2 LABELS "sanitize")
# The QDQ models' convolutions and matrix products both ways, whatever auto picks on this
# machine: on 8-bit values (the int8 kernels, exact in int32) and on the dequantized floats.
bdc_add_test(real_run_qdq_int8 COMMAND ${BDC_PYTHON} tests/test_real_run.py --qdq int8 --check-seeds 2
             resnet18_int8 bert_int8_qdq LABELS "sanitize")
bdc_add_test(real_run_qdq_float COMMAND ${BDC_PYTHON} tests/test_real_run.py --qdq float resnet18_int8
             bert_int8_qdq)
# Small QDQ convolutions (signedness, per-channel scales, zero points, strides, groups, 1-D) both
# ways against onnxruntime's unoptimized session, with a fused residual Add and Relu; a
# requantized output, QDQ MaxPools and QDQ matrix products (MatMul and Gemm).
bdc_add_test(qdq_conv COMMAND ${BDC_PYTHON} tests/test_qdq_conv.py LABELS "sanitize")
# QDQ elementwise chains (GELU, Sigmoid and Tanh) as lookup tables under --fusion block, and not
# under none and op, against onnxruntime's unoptimized session.
bdc_add_test(qdq_tables COMMAND ${BDC_PYTHON} tests/test_qdq_tables.py LABELS "sanitize")
bdc_add_test(dynamic_shapes COMMAND ${BDC_PYTHON} tests/test_dynamic_shapes.py LABELS "sanitize")
bdc_add_test(control_flow COMMAND ${BDC_PYTHON} tests/test_control_flow.py LABELS "sanitize")
bdc_add_test(control_flow_nofusion COMMAND ${BDC_PYTHON} tests/test_control_flow.py --fusion none)
bdc_add_test(bad_input COMMAND bash tests/test_bad_input.sh $<TARGET_FILE:bdc> LABELS "sanitize")
bdc_add_test(hostile_names COMMAND ${BDC_PYTHON} tests/test_hostile_names.py LABELS "sanitize")
# The other fusion x schedule modes (none/op and block/op are covered by random_graphs).
bdc_add_test(real_run_nofusion COMMAND ${BDC_PYTHON} tests/test_real_run.py --fusion none)
bdc_add_test(real_run_op_schedule COMMAND ${BDC_PYTHON} tests/test_real_run.py --schedule op)
bdc_add_test(real_run_op_fusion COMMAND ${BDC_PYTHON} tests/test_real_run.py --fusion op
             --check-seeds 2)
# --precision bf16 on the cpu (MatMul and Gemm by constant weights, and the convolutions of the
# 16-lane direct kernel, in bfloat16): the error against the fp32 reference, printed and bounded
# (PRECISION_TOL_CPU).
bdc_add_test(real_run_bf16 COMMAND ${BDC_PYTHON} tests/test_real_run.py --precision bf16 bert gpt2 vit
             resnet18 mobilenet_v2 googlenet densenet121 LABELS "sanitize")
# Generated graphs (CNN and attention families), every fusion x schedule mode, against
# onnxruntime; a longer sweep is `tests/test_random_graphs.py --seeds N --first S`.
bdc_add_test(random_graphs COMMAND ${BDC_PYTHON} tests/test_random_graphs.py --seeds 8 -j 1)
# Sibling convolutions stacked by --fusion block: which stack, and every case against
# onnxruntime under both schedules and random block orders.
bdc_add_test(horizontal COMMAND ${BDC_PYTHON} tests/test_horizontal.py LABELS "sanitize")
# Attention fused per band of rows (--fusion block): edge shapes and scores, and near misses.
bdc_add_test(attention COMMAND ${BDC_PYTHON} tests/test_attention.py LABELS "sanitize")
# A MaxPool fused into the convolution before it (--fusion block): edge windows, near misses.
bdc_add_test(conv_pool COMMAND ${BDC_PYTHON} tests/test_conv_pool.py LABELS "sanitize")
# The --dump=tiles text of small models against tests/golden/*.tiles (BDC_UPDATE_GOLDEN=1 rewrites).
bdc_add_test(golden COMMAND bash tests/test_golden.sh $<TARGET_FILE:bdc>)
bdc_add_test(attr_choices COMMAND ${BDC_PYTHON} tests/test_attr_choices.py)
# BatchNormalization, Mul and Add folded into the Conv before them, both fusion modes.
bdc_add_test(fold_conv COMMAND ${BDC_PYTHON} tests/test_fold_conv.py)
bdc_add_test(fold_conv_nofusion COMMAND ${BDC_PYTHON} tests/test_fold_conv.py --fusion none)
# Repeated layers' block functions printed once (target/share.c): how many share a body,
# against onnxruntime in two fusion modes, and two --lib copies linked into one program.
bdc_add_test(shared_bodies COMMAND ${BDC_PYTHON} tests/test_shared_bodies.py LABELS "sanitize")
# src/'s include arrows run one way, down the pipeline.
bdc_add_test(layering COMMAND bash tests/test_layering.sh)
# The GPU targets without a GPU. Every real model builds for cuda (nvcc, sm_90) and hip (hipcc,
# gfx90a) with --werror, deterministically, the schedules alternating between models (every
# model in both, densenet121 included, in the manual full sweep: BDC_GPU_BUILD_ALL=1); the opencl executables run on PoCL against onnxruntime: the
# real models in both schedules (the persistent kernel also with random CTA assignments and one
# CTA) and one node-suite case in six (the full sweep: tests/test_node_run.py --target opencl).
bdc_add_test(gpu_build COMMAND bash tests/test_gpu_build.sh $<TARGET_FILE:bdc>)
bdc_add_test(gpu_opencl_real COMMAND ${BDC_PYTHON} tests/test_real_run.py --target opencl --schedule op)
bdc_add_test(gpu_opencl_real_qdq_int8 COMMAND ${BDC_PYTHON} tests/test_real_run.py --target opencl
             --schedule op --qdq int8 resnet18_int8)
bdc_add_test(gpu_opencl_qdq_conv COMMAND ${BDC_PYTHON} tests/test_qdq_conv.py --target opencl)
bdc_add_test(gpu_opencl_qdq_tables COMMAND ${BDC_PYTHON} tests/test_qdq_tables.py --target opencl
             --gpu-builds)
bdc_add_test(gpu_opencl_real_block COMMAND ${BDC_PYTHON} tests/test_real_run.py --target opencl
             --schedule block --check-seeds 2)
bdc_add_test(gpu_opencl_node COMMAND ${BDC_PYTHON} tests/test_node_run.py --target opencl --schedule op
             --sample 6 -j 1)
bdc_add_test(gpu_opencl_node_block COMMAND ${BDC_PYTHON} tests/test_node_run.py --target opencl
             --schedule block --sample 6 -j 1)
# GoogLeNet's stacked sibling convolutions and BERT's fused attention (--fusion block) on the GPU
# printer, and the attention cases.
bdc_add_test(gpu_opencl_real_block_fusion COMMAND ${BDC_PYTHON} tests/test_real_run.py --target opencl
             --schedule block --fusion block googlenet bert)
bdc_add_test(gpu_opencl_attention COMMAND ${BDC_PYTHON} tests/test_attention.py --target opencl)
# --branches fuse (small independent siblings in one kernel) on the branchy models.
bdc_add_test(gpu_opencl_real_fuse COMMAND ${BDC_PYTHON} tests/test_real_run.py --target opencl --schedule op
             --branches fuse googlenet squeezenet1_1 shufflenet_v2_x1_0 densenet121)
# --precision on PoCL: the error against the fp32 reference, printed and bounded (PRECISION_TOL).
foreach(gpu_precision tf32 fp16 bf16)
  bdc_add_test(gpu_opencl_real_${gpu_precision} COMMAND ${BDC_PYTHON} tests/test_real_run.py --target opencl
               --schedule op --precision ${gpu_precision} resnet18 bert mobilenet_v2)
endforeach()
# One node-suite case in 40 built (not run: no device) for cuda and hip, in both schedules.
foreach(gpu_target cuda hip)
  foreach(gpu_schedule op block)
    bdc_add_test(gpu_${gpu_target}_node_build_${gpu_schedule} COMMAND ${BDC_PYTHON} tests/test_node_run.py
                 --target ${gpu_target} --schedule ${gpu_schedule} --sample 40 -j 1)
  endforeach()
endforeach()
# The GPU benchmark's trtexec/migraphx-driver parsers and adapters on fixtures (no GPU needed).
bdc_add_test(bench_parsers COMMAND ${BDC_PYTHON} tests/test_bench_parsers.py)
