"""The AG-UI data the stages and the Conversation share: the Conversation and its JSON
Patch, capabilities declarations and agent resources, the run input and resuming."""
