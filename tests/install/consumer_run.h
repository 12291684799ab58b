/* The measured run both consumers predict, in the schema of
 * data/calibration/README.md: a 22B GPT on 8 A100s, tensor parallel 8. */
#ifndef CONSUMER_RUN_H
#define CONSUMER_RUN_H

#define CONSUMER_RUN_JSON                                                                   \
    "[{\"id\": \"consumer-gpt22b-tp8\", \"kind\": \"train\", \"framework\": \"megatron-lm\","  \
    " \"model\": {\"model_type\": \"gpt2\", \"hidden_size\": 6144, \"num_hidden_layers\": 48," \
    " \"num_attention_heads\": 64, \"intermediate_size\": 24576, \"vocab_size\": 51200,"     \
    " \"max_position_embeddings\": 2048, \"tie_word_embeddings\": true},"                     \
    " \"hardware\": {\"chip\": \"a100-80gb\", \"chips\": 8, \"chips_per_node\": 8},"          \
    " \"parallelism\": {\"tp\": 8, \"pp\": 1, \"dp\": 1, \"micro_batch_size\": 4,"            \
    " \"global_batch_size\": 4},"                                                             \
    " \"workload\": {\"seq_len\": 2048, \"precision\": \"fp16\", \"remat\": \"full\"},"       \
    " \"measured\": {\"metric\": \"step_time_s\", \"value\": 1.42}, \"step_time_s\": 1.42}]"

#endif
