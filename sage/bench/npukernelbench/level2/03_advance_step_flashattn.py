"""vLLM decode-step bookkeeping, as torch_npu.npu_advance_step_flashattn."""

import torch

DESCRIPTION = (
    "npu_advance_step_flashattn (vLLM advance_step for flash attention): for each of the "
    "first num_queries sequences i: input_tokens[i] = sampled_token_ids[i, 0]; the new "
    "token's position is the old seq_lens[i], so input_positions[i] = seq_lens[i], "
    "seq_lens[i] += 1, slot_mapping[i] = block_tables[i, pos // block_size] * block_size "
    "+ pos % block_size. Sequences num_queries..num_seqs-1 (padding) are left unchanged; "
    "block_tables is only read. The vendor op updates in place; here the four updated "
    "tensors are returned as fresh int64 tensors (input_tokens, input_positions, "
    "seq_lens, slot_mapping), each [num_seqs]."
)
TAGS = ["index", "gather", "elementwise"]
FUSED_OP = "torch_npu.npu_advance_step_flashattn"


class Model(torch.nn.Module):
    def forward(self, input_tokens, sampled_token_ids, input_positions, seq_lens, slot_mapping,
                block_tables, num_seqs: int, num_queries: int, block_size: int):
        q = num_queries
        tokens = input_tokens.clone()
        positions = input_positions.clone()
        lens = seq_lens.clone()
        slots = slot_mapping.clone()
        new_pos = seq_lens[:q]
        tokens[:q] = sampled_token_ids[:q, 0]
        positions[:q] = new_pos
        lens[:q] = new_pos + 1
        block = block_tables[:q].gather(1, (new_pos // block_size)[:, None])[:, 0]
        slots[:q] = block * block_size + new_pos % block_size
        return tokens, positions, lens, slots


def get_init_inputs():
    return []


# (num_seqs, num_queries, block_size, max_blocks_per_seq, vocab)
_CASES = [
    (16, 16, 128, 32, 32000),
    (256, 200, 16, 64, 151936),
    (2117, 2117, 128, 16, 50257),
]


def _case(num_seqs, num_queries, block_size, max_blocks, vocab):
    # Every sequence must have room for one more token inside its block table.
    seq_lens = torch.randint(1, max_blocks * block_size - 1, (num_seqs,), dtype=torch.int64)
    block_tables = torch.randperm(num_seqs * max_blocks * 2)[: num_seqs * max_blocks]
    block_tables = block_tables.reshape(num_seqs, max_blocks).to(torch.int64)
    last_pos = seq_lens - 1
    slot_mapping = (
        block_tables.gather(1, (last_pos // block_size)[:, None])[:, 0] * block_size
        + last_pos % block_size
    )
    input_tokens = torch.randint(0, vocab, (num_seqs,), dtype=torch.int64)
    sampled = torch.randint(0, vocab, (num_queries, 1), dtype=torch.int64)
    return [input_tokens, sampled, last_pos.clone(), seq_lens, slot_mapping, block_tables,
            num_seqs, num_queries, block_size]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
