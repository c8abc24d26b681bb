//! Error control: the datagram SACK sender scoreboard and the receiver's record of received packet numbers.
