"""Peers timed next to bdc on a GPU: adapters for trtexec (TensorRT) and migraphx-driver
(MIGraphX), and the row format and statistics they share with bench/gpu_peers.py."""
