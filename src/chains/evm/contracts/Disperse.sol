// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @notice Gas-tank top-ups: one transaction sends native coin to many deposit addresses.
/// Stateless and ownerless: it holds nothing between calls, so there is nothing to steal or
/// configure. `msg.value` must equal the sum of `amounts` exactly (no refund logic, no leftover);
/// a failed send reverts the whole batch so the caller never has to guess who was paid.
contract Disperse {
    error LengthMismatch();
    error ValueMismatch(uint256 sent, uint256 total);
    error SendFailed(address to);

    function disperse(address payable[] calldata to, uint256[] calldata amounts) external payable {
        uint256 n = to.length;
        if (n != amounts.length) revert LengthMismatch();
        uint256 total;
        for (uint256 i; i < n; ) {
            uint256 v = amounts[i];
            total += v;
            address payable r = to[i];
            // gas left to the recipient: a delegated (EIP-7702) deposit runs its receive() here
            (bool ok, ) = r.call{value: v}("");
            if (!ok) revert SendFailed(r);
            unchecked {
                ++i;
            }
        }
        if (total != msg.value) revert ValueMismatch(msg.value, total);
    }
}
