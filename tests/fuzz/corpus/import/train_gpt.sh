#!/bin/bash
# Written for parasim's tests in the shape of Megatron-LM's example launch scripts
# (examples/gpt3/train_gpt3_175b_distributed.sh): torchrun's arguments and Megatron-LM's flags
# in bash arrays. The values are made up.
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
NUM_NODES=4
TP=4
CHECKPOINT_PATH=$1

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr localhost
    --master_port 6000
)

GPT_MODEL_ARGS=(
    --num-layers 24
    --hidden-size 2048
    --num-attention-heads 16
    --seq-length 2048
    --max-position-embeddings 2048
    --attention-backend auto # flash or fused
)

TRAINING_ARGS=(
    --micro-batch-size 2
    --global-batch-size 256
    --train-iters 500000
    --lr 6.0e-5
    --bf16
    --use-distributed-optimizer \
    --overlap-grad-reduce
)

MODEL_PARALLEL_ARGS=(
	--tensor-model-parallel-size $TP
	--pipeline-model-parallel-size 2
	--sequence-parallel
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    --vocab-file $VOCAB_FILE --merge-file "$MERGE_FILE" \
    --save $CHECKPOINT_PATH
