// Placeholder so the layer's library has a source until its first real file lands; delete then.
