"""Models: the WordPiece tokenizer, the encoders, the bilinear matcher, pretraining, training, runtime and checkpoints."""
